import type { SandboxSessionView } from '../verification/verification.service';

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const DECIDED_TEXT: Record<string, string> = {
  verified: 'Identity verified. You can close this page.',
  pending: 'The check failed; the organisation can start a new one.',
  rejected: 'The check was declined.',
  unverified: 'This session was cancelled.',
};

/**
 * The sandbox identity provider's page `{checkout_host}/verify/{token}` (docs/architecture.md §16):
 * a person completes, fails or declines the check with a plain form POST (no script, strict CSP).
 * Every value is HTML-escaped.
 */
export function renderVerifyPage(session: SandboxSessionView): string {
  const ref = escape(session.reference);
  const body =
    session.status === 'open'
      ? `<p>This is the <strong>sandbox</strong> identity provider of a local development chain. A real provider would check
a government ID and a selfie here; in the sandbox you choose the outcome.</p>
<form method="post" action="/verify/${ref}"><input type="hidden" name="outcome" value="verified"><button class="ok" type="submit">Complete verification</button></form>
<form method="post" action="/verify/${ref}"><input type="hidden" name="outcome" value="requires_input"><button type="submit">Fail the check (may retry)</button></form>
<form method="post" action="/verify/${ref}"><input type="hidden" name="outcome" value="declined"><button class="no" type="submit">Decline (rejects the organisation)</button></form>
<p><small>Link valid until ${escape(session.expiresAt?.toISOString() ?? '')}</small></p>`
      : session.status === 'expired'
        ? '<p class="status">This verification link has expired. Start a new one with <code>POST /api/v1/verification/start</code>.</p>'
        : `<p class="status" data-status="${escape(session.identityStatus)}">${escape(DECIDED_TEXT[session.identityStatus] ?? session.identityStatus)}</p>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Verify ${escape(session.organizationName)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
form{display:inline-block;margin:.3rem .5rem .3rem 0}button{font:inherit;padding:.5rem 1rem;border-radius:.3rem;border:1px solid #9aa5b1;background:#fff;cursor:pointer}
button.ok{background:#1b5fd1;color:#fff;border-color:#1b5fd1}button.no{color:#b42318;border-color:#b42318}.status{display:inline-block;padding:.4rem .8rem;border-radius:1rem;background:#eef2f7}</style>
</head><body>
<h1>Identity check for ${escape(session.organizationName)}</h1>
${body}
</body></html>`;
}
