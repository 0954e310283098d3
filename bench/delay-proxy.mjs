// A TCP proxy that delays every chunk by a fixed time in each direction, as a managed database in
// the same region is away (DESIGN §23: 0.5 ms each way, or 1 ms where Node's timers cannot
// schedule 0.5 ms). Run as its own process so its work is not charged to the servers measured:
//
//   node bench/delay-proxy.mjs --target 127.0.0.1:5432 --delay-ms 1 [--port 0]
//
// Prints `delay-proxy listening on <port>` once ready. Order is kept per direction (a chunk is
// never sent before the one received before it). On SIGTERM, or every 5 s, it prints the delays
// it achieved: `delay-proxy achieved p50 <ms> p99 <ms> n <chunks>` (receive → write, measured).
import { createServer, connect } from 'node:net';
import { eachFlag, percentile } from './lib.mjs';

let target = null;
let delayMs = 1;
let port = 0;
for (const { flag, arg, value } of eachFlag(process.argv.slice(2))) {
  if (flag === '--target') target = value();
  else if (flag === '--delay-ms') delayMs = Number(value());
  else if (flag === '--port') port = Number(value());
  else throw new Error(`unknown flag ${arg}`);
}
if (!target || !(delayMs >= 0)) throw new Error('usage: delay-proxy.mjs --target host:port --delay-ms N');
const [host, targetPort] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];

// Achieved delays, in ms, kept in a bounded ring (the last 20,000 chunks).
const achieved = [];
let next = 0;
const note = (ms) => {
  if (achieved.length < 20_000) achieved.push(ms);
  else achieved[next++ % 20_000] = ms;
};

/** Forwards `from` → `to`, each chunk `delayMs` after it arrived, in order. */
function pipeDelayed(from, to) {
  const queue = [];
  let timer = null;
  const flush = () => {
    timer = null;
    const now = performance.now();
    while (queue.length && queue[0].due <= now + 0.05) {
      const { chunk, at } = queue.shift();
      note(performance.now() - at);
      to.write(chunk);
    }
    if (queue.length) timer = setTimeout(flush, Math.max(0, queue[0].due - performance.now()));
  };
  from.on('data', (chunk) => {
    const at = performance.now();
    queue.push({ chunk, at, due: at + delayMs });
    if (!timer) timer = setTimeout(flush, delayMs);
  });
  from.on('end', () => {
    const finish = () => (queue.length ? setTimeout(finish, delayMs) : to.end());
    finish();
  });
  from.on('error', () => to.destroy());
}

const server = createServer((client) => {
  client.setNoDelay(true);
  const upstream = connect({ host, port: targetPort });
  upstream.setNoDelay(true);
  pipeDelayed(client, upstream);
  pipeDelayed(upstream, client);
  upstream.on('close', () => client.destroy());
  client.on('close', () => upstream.destroy());
});

const report = () => {
  const sorted = [...achieved].sort((a, b) => a - b);
  if (sorted.length) console.log(`delay-proxy achieved p50 ${percentile(sorted, 50).toFixed(3)} p99 ${percentile(sorted, 99).toFixed(3)} n ${sorted.length}`);
};
setInterval(report, 5000).unref();
server.listen(port, '127.0.0.1', () => console.log(`delay-proxy listening on ${server.address().port} (target ${target}, ${delayMs} ms each way)`));
process.on('SIGTERM', () => {
  report();
  process.exit(0);
});
