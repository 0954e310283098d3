import type { SandboxSessionView } from '../../../modules/verification/verification.service';
import { escapeHtml as escape, renderShell } from './page-shell';

const DECIDED_TEXT: Record<string, string> = {
  verified: 'Identity verified. You can close this page.',
  pending: 'The check failed; the organisation can start a new one.',
  rejected: 'The check was declined.',
  unverified: 'This session was cancelled.',
};

/**
 * The sandbox identity provider's page `{checkout_host}/verify/{token}` (docs/architecture.md §16)
 * on the shared page shell: a person completes, fails or declines the check with a plain form POST
 * (no script needed, strict CSP with form-action 'self'). Every value is HTML-escaped.
 */
export function renderVerifyPage(session: SandboxSessionView): string {
  const ref = escape(session.reference);
  const body =
    session.status === 'open'
      ? `<p>This is the <strong>sandbox</strong> identity provider of a local development chain. A real provider would check
a government ID and a selfie here; in the sandbox you choose the outcome.</p>
<form method="post" action="/verify/${ref}"><input type="hidden" name="outcome" value="verified"><button class="primary" type="submit">Complete verification</button></form>
<form method="post" action="/verify/${ref}"><input type="hidden" name="outcome" value="requires_input"><button type="submit">Fail the check (may retry)</button></form>
<form method="post" action="/verify/${ref}"><input type="hidden" name="outcome" value="declined"><button class="danger" type="submit">Decline (rejects the organisation)</button></form>
<p class="muted">Link valid until ${escape(session.expiresAt?.toISOString() ?? '')}</p>`
      : session.status === 'expired'
        ? '<p class="status" data-tone="bad">This verification link has expired. Start a new one with <code>POST /api/v1/verification/start</code>.</p>'
        : `<p class="status" data-status="${escape(session.identityStatus)}" data-tone="${session.identityStatus === 'verified' ? 'ok' : 'bad'}">${escape(DECIDED_TEXT[session.identityStatus] ?? session.identityStatus)}</p>`;
  return renderShell({ title: `Verify ${session.organizationName}`, main: `<h1>Identity check for ${escape(session.organizationName)}</h1>\n${body}`, mainAttrs: { page: 'verify' } });
}
