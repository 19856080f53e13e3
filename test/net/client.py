# Egress probes run inside a sandbox: what ordinary programs do, through the
# proxy variables the sandbox has. Prints one JSON line.
#   client.py http URL            urllib (HTTP_PROXY / HTTPS_PROXY, system CA bundle)
#   client.py socks HOST PORT     SOCKS5 CONNECT to 127.0.0.1:1080, then echo a line
#   client.py direct HOST PORT    a plain TCP connect, no proxy
#   client.py batch JSON          several of the above, [[cmd, args...], ...]: a list
#   client.py scan HEX...         look for the strings (hex-encoded, so that this
#                                 process's arguments do not hold them) in env, /proc, files
import json, os, socket, struct, sys, urllib.request, urllib.error

def http(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return {'status': r.status, 'body': r.read().decode()}
    except urllib.error.HTTPError as e:
        return {'status': e.code, 'body': e.read().decode()}
    except Exception as e:
        return {'status': 0, 'error': repr(e)}

def socks(host, port):
    s = socket.create_connection(('127.0.0.1', 1080), timeout=20)
    s.sendall(b'\x05\x01\x00')
    if s.recv(2) != b'\x05\x00':
        return {'reply': -1}
    try:
        addr = b'\x01' + socket.inet_aton(host)
    except OSError:
        addr = b'\x03' + bytes([len(host)]) + host.encode()
    s.sendall(b'\x05\x01\x00' + addr + struct.pack('>H', port))
    head = s.recv(10)
    if len(head) < 2 or head[1] != 0:
        return {'reply': head[1] if len(head) > 1 else -1}
    s.sendall(b'hello through socks\n')
    return {'reply': 0, 'echo': s.recv(100).decode()}

def direct(host, port):
    try:
        socket.create_connection((host, port), timeout=5)
        return {'connected': True}
    except Exception as e:
        return {'connected': False, 'error': repr(e)}

def scan(secrets):
    found = []
    for k, v in os.environ.items():
        for s in secrets:
            if s in k or s in v:
                found.append('env:' + k)
    roots = ['/proc'] + ['/etc', '/tmp', '/root', '/home', '/usr/local', '/var', '/opt', '/run']
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        for f in ('environ', 'cmdline'):
            try:
                data = open(f'/proc/{pid}/{f}', 'rb').read()
            except OSError:
                continue
            for s in secrets:
                if s.encode() in data:
                    found.append(f'/proc/{pid}/{f}')
        # The memory of every process, the agent's included.
        try:
            maps = open(f'/proc/{pid}/maps').read().splitlines()
            mem = open(f'/proc/{pid}/mem', 'rb')
            for line in maps:
                span, perms = line.split()[:2]
                if 'r' not in perms:
                    continue
                lo, hi = (int(x, 16) for x in span.split('-'))
                if hi - lo > 512 * 1024 * 1024:
                    continue
                try:
                    mem.seek(lo)
                    chunk = mem.read(hi - lo)
                except (OSError, ValueError, OverflowError):
                    continue
                for s in secrets:
                    if s.encode() in chunk:
                        found.append(f'/proc/{pid}/mem')
        except OSError:
            pass
    for root in roots[1:]:
        for d, _, files in os.walk(root):
            for name in files:
                p = os.path.join(d, name)
                try:
                    if os.path.islink(p) or os.path.getsize(p) > 8 * 1024 * 1024:
                        continue
                    data = open(p, 'rb').read()
                except OSError:
                    continue
                for s in secrets:
                    if s.encode() in data:
                        found.append(p)
    return {'found': sorted(set(found)), 'proc_mem_readable': os.access('/proc/1/mem', os.R_OK)}

def run(cmd, *args):
    if cmd == 'http':
        return http(args[0])
    if cmd == 'socks':
        return socks(args[0], int(args[1]))
    if cmd == 'direct':
        return direct(args[0], int(args[1]))
    if cmd == 'batch':
        return [run(*c) for c in json.loads(args[0])]
    return scan([bytes.fromhex(h).decode() for h in args])

print(json.dumps(run(*sys.argv[1:])))
