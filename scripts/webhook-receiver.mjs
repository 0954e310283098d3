#!/usr/bin/env node
// A local webhook receiver for the README walkthrough: verifies every delivery with the
// `standardwebhooks` library (as a merchant's server should) and prints the event.
//   WEBHOOK_SECRET=whsec_… npm run webhook:receiver        (listens on 127.0.0.1:$RECEIVER_PORT, default 4000)
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const secret = process.env.WEBHOOK_SECRET;
if (!secret?.startsWith('whsec_')) {
  console.error('set WEBHOOK_SECRET to the whsec_… secret returned by PUT /api/v1/webhook-endpoints');
  process.exit(2);
}
const wh = new Webhook(secret);
const port = Number(process.env.RECEIVER_PORT ?? 4000);
const seen = new Set();

createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    let event;
    try {
      event = wh.verify(raw, req.headers);
    } catch (err) {
      console.log(`rejected: ${err.message}`);
      res.writeHead(400).end();
      return;
    }
    const id = req.headers['webhook-id'];
    const duplicate = seen.has(id);
    seen.add(id);
    const o = event.data?.object ?? {};
    console.log(`${duplicate ? 'duplicate ' : ''}${event.type}  checkout ${o.id} status ${o.status} amount ${o.amount}  (webhook-id ${id}, signature verified)`);
    res.writeHead(204).end();
  });
}).listen(port, '127.0.0.1', () => console.log(`webhook receiver on http://127.0.0.1:${port}/webhooks (Ctrl-C to stop)`));
