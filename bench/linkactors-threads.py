#!/usr/bin/env python3
"""Give a `wap5 gen --parents` trace thread actors (sa=/da=) as a
thread-per-request server would have them: at every node that receives
requests, each request span (request received -> reply sent) runs in one
thread of a pool (the lowest free one when the request arrives); every
message the span sends leaves from that thread, every return to it arrives
there. Clients stay unknown. Usage: linkactors-threads.py IN OUT"""
import sys

lines = open(sys.argv[1]).read().splitlines()
hdr, msgs = [], []
for ln in lines:
    if ln.startswith('#') or not ln.strip():
        hdr.append(ln)
        continue
    f = ln.split()
    kv = dict(x.split('=', 1) for x in f[7:] if '=' in x)
    msgs.append({'f': f, 'send': float(f[0]), 'src': f[1], 'recv': float(f[3]), 'dst': f[4], 'kv': kv})
byid = {m['kv']['id']: m for m in msgs}
calls = {}
for m in msgs:
    if m['kv'].get('kind') == 'call':
        calls[m['kv']['call']] = m
reply_of = {}
for m in msgs:
    if m['kv'].get('kind') == 'return':
        c = calls.get(m['kv']['call'])
        if c is not None:
            reply_of[id(c)] = m
            m['req'] = c


def span_of(o):
    """The request received at o's sender whose span sent o, or None."""
    b = o['src']
    if o['kv'].get('kind') == 'return' and 'req' in o and o['req']['dst'] == b:
        return o['req']
    p = byid.get(o['kv'].get('parent'))
    for _ in range(1000):
        if p is None or p['dst'] != b:
            return None
        k = p['kv'].get('kind')
        if k == 'call':
            return p
        if k == 'return' and 'req' in p:
            p = byid.get(p['req']['kv'].get('parent'))
            continue
        return None
    return None

# Thread pools per node: spans by open time.
spans = [m for m in msgs if m['kv'].get('kind') == 'call' and id(m) in reply_of]
events = []
for s in spans:
    events.append((s['recv'], 1, id(s), s))
    events.append((reply_of[id(s)]['send'], 0, id(s), s))
events.sort(key=lambda e: (e[0], e[1]))
free, nthreads, thread = {}, {}, {}
for t, kind, _, s in events:
    b = s['dst']
    if kind == 1:
        fl = free.setdefault(b, [])
        if fl:
            fl.sort()
            th = fl.pop(0)
        else:
            th = nthreads.get(b, 0) + 1
            nthreads[b] = th
        thread[id(s)] = th
    else:
        free.setdefault(b, []).append(thread[id(s)])
out = []
for m in msgs:
    kv = m['kv']
    extra = []
    if id(m) in thread:
        extra.append('da=1/%d' % thread[id(m)])
    sp = span_of(m)
    if sp is not None and id(sp) in thread:
        extra.append('sa=1/%d' % thread[id(sp)])
        m['sa'] = thread[id(sp)]
    out.append(m)
    m['extra'] = extra
# Returns arrive at the thread that sent their call.
for m in msgs:
    if m['kv'].get('kind') == 'return' and 'req' in m and 'sa' in m['req'] and m['req']['src'] == m['dst']:
        m['extra'].append('da=1/%d' % m['req']['sa'])
with open(sys.argv[2], 'w') as w:
    for h in hdr:
        w.write(h + '\n')
    for m in msgs:
        w.write(' '.join(m['f'] + m['extra']) + '\n')
