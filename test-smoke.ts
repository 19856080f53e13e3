import { HostAgent, createDriver } from '@warren/host-agent';
const home = '/tmp/wsmoke';
const driver = createDriver('gvisor', { runsc: '/work/main/.state/bin/runsc', stateDir: home + '/runsc' });
const agent = new HostAgent({ hostId: 'host_local', sandboxesDir: home + '/sbx', templatesDir: '/work/main/.state/templates', memoryBudgetMb: 8000, debianMirror: 'http://deb.debian.org/debian', readyTimeoutMs: 10000 }, driver);
let t = Date.now();
await agent.ensureTemplate('base', (l) => console.log('progress:', l));
console.log('template', Date.now() - t);
for (const n of [1, 2, 3]) {
  t = Date.now();
  await agent.createSandbox({ id: 'sbx_t' + n, template: 'base', cpu: 1, memoryMb: 512, env: { FOO: 'bar' + n } });
  const c = agent.channel('sbx_t' + n);
  const created = Date.now() - t;
  const res = await c.request({ method: 'POST', path: '/processes', json: { cmd: 'sh', args: ['-c', 'echo $FOO; hostname; head -1 /proc/meminfo'] } });
  let out = ''; for await (const ch of res.body) out += ch;
  console.log('create', created, 'first exec', Date.now() - t, out.trim().split('\n').join(' | '));
  const times = [];
  for (let i = 0; i < 10; i++) { const s = performance.now(); const r = await c.request({ method: 'POST', path: '/processes', json: { cmd: 'true', args: [] } }); for await (const _ of r.body); times.push(Math.round(performance.now() - s)); }
  console.log('exec true', times.join(' '));
}
for (const n of [1, 2, 3]) { t = Date.now(); await agent.destroySandbox('sbx_t' + n); console.log('destroy', Date.now() - t); }
console.log(await driver.list());
