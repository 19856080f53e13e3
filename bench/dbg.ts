import { PREVIEW_APP } from '/work/wt-preview/test/preview-app';
import { startTestPlatform } from '/work/wt-preview/test/fixture';
const p = await startTestPlatform({ memoryBudgetMb: 16_000 });
try {
  const sbx = await p.json<{ id: string }>('/v1/sandboxes', {
    method: 'POST',
    json: { template: 'base' },
  });
  await p.json(`/v1/sandboxes/${sbx.id}/processes`, {
    method: 'POST',
    json: { cmd: 'python3', args: ['-c', PREVIEW_APP, '3000'] },
  });
  await new Promise((r) => setTimeout(r, 1500));
  const ch = p.context.host.channel(sbx.id);
  for (let k = 0; k < 3; k++) {
    let t = performance.now();
    const s = await ch.openPort(3000);
    console.log('openPort ms', performance.now() - t);
    s.resume();
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      t = performance.now();
      await new Promise<void>((res) => {
        s.once('data', () => res());
        s.write('GET /hello HTTP/1.1\r\nhost: x\r\n\r\n');
      });
      times.push(performance.now() - t);
    }
    console.log('raw rtt', times.map((x) => x.toFixed(2)).join(' '));
    t = performance.now();
    let n = 0;
    await new Promise<void>((res) => {
      const on = (d: Buffer) => {
        n += d.length;
        if (n >= 104857600) {
          s.off('data', on);
          res();
        }
      };
      s.on('data', on);
      s.write('GET /bytes?n=104857600 HTTP/1.1\r\nhost: x\r\n\r\n');
    });
    console.log('raw download ms', performance.now() - t);
    s.destroy();
  }
} finally {
  await p.stop();
}
