#!/usr/bin/env node
// A local SMTP catcher for the demo (README "Send an invoice"): accepts every mail on
// 127.0.0.1:$MAIL_CATCHER_PORT (default 1025), stores it as .local/mail/<time>-<n>.eml plus a
// readable .txt, and prints one line per mail with the recipient, subject and first link.
// Development only: no TLS, no authentication, never relays anything.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';

const port = Number(process.env.MAIL_CATCHER_PORT ?? 1025);
const dir = join(process.cwd(), '.local', 'mail');
mkdirSync(dir, { recursive: true });
let n = 0;

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  onData(stream, session, cb) {
    const chunks = [];
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', async () => {
      try {
        const raw = Buffer.concat(chunks);
        const mail = await simpleParser(raw);
        const base = join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${++n}`);
        writeFileSync(`${base}.eml`, raw);
        writeFileSync(`${base}.txt`, `From: ${mail.from?.text}\nTo: ${mail.to?.text}\nSubject: ${mail.subject}\n\n${mail.text ?? ''}`);
        const link = /https?:\/\/\S+/.exec(mail.text ?? '')?.[0] ?? '';
        console.log(`mail to ${session.envelope.rcptTo.map((r) => r.address).join(', ')}: ${mail.subject}  ${link}  → ${base}.txt`);
        cb();
      } catch (err) {
        cb(err);
      }
    });
  },
});
server.listen(port, '127.0.0.1', () => console.log(`mail catcher on smtp://127.0.0.1:${port}, mails in ${dir}`));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
