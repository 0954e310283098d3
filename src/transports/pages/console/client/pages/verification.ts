/** The organisation's verification (KYB) status and its start button. */
import { say } from '../../../pay/client/ui';
import { pcp } from '../api';
import { attempt, content, fieldsTable, h, text } from '../dom';

/** Renders the verification snapshot; Start verification shows where to continue (`verificationUrl`). */
export async function verificationPage(): Promise<void> {
  const v = await pcp.GET('/api/v1/verification');
  content().replaceChildren(
    h('p', {}, 'Status: ', h('span', { id: 'kyb-status', class: 'status' }, text(v.status))),
    fieldsTable(v, 'verification'),
    h('button', { id: 'start-verification', class: 'primary', type: 'button', click: () => void attempt(async () => {
      const res = await pcp.POST('/api/v1/verification/start');
      say(res.verificationUrl ? `Continue at ${text(res.verificationUrl)}` : 'Verification started.', 'ok');
      await verificationPage();
    }) }, 'Start verification'),
  );
}
