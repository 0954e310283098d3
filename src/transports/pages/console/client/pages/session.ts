/** The sign-in page (EIP-4361 with the connected wallet), sign-out, and the home page's create-organisation form. */
import { setupConnect } from '../../../pay/client/connect';
import { say } from '../../../pay/client/ui';
import { consoleCall } from '../api';
import { attempt, data, formValues, h } from '../dom';

export function signInPage(): void {
  const chainId = Number(data.chainId);
  document.getElementById('wallet')!.hidden = false;
  setupConnect(
    () => chainId,
    (wallet) => {
      const actions = document.getElementById('actions')!;
      actions.replaceChildren(
        h('button', {
          id: 'sign-in',
          class: 'primary',
          type: 'button',
          click: () =>
            void attempt(async () => {
              const n = await consoleCall('GET /console/api/nonce');
              const now = new Date();
              // EIP-4361 message format, field order as the standard gives it.
              const message = [
                `${n.domain} wants you to sign in with your Ethereum account:`,
                wallet.account,
                '',
                'Sign in to the payments console.',
                '',
                `URI: ${n.uri}`,
                'Version: 1',
                `Chain ID: ${n.chainId}`,
                `Nonce: ${n.nonce}`,
                `Issued At: ${now.toISOString()}`,
                `Expiration Time: ${new Date(now.getTime() + 5 * 60_000).toISOString()}`,
              ].join('\n');
              say('Confirm in your wallet.');
              const signature = await wallet.personalSign(message);
              await consoleCall('POST /console/api/sign-in', { message, signature });
              location.assign('/console');
            }),
        }, 'Sign in with Ethereum'),
      );
    },
  );
}

export function wireSignOut(): void {
  document.getElementById('sign-out')?.addEventListener('click', () =>
    void attempt(async () => {
      await consoleCall('POST /console/api/sign-out');
      location.assign('/console');
    }),
  );
}

export function homePage(): void {
  const form = document.getElementById('create-org') as HTMLFormElement;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(async () => {
      const v = formValues(form);
      const org = await consoleCall('POST /console/api/organizations', { name: v.name, handle: v.handle, ...(v.payoutAddress ? { payoutAddress: v.payoutAddress } : {}) });
      location.assign(`/console/orgs/${org.id}`);
    });
  });
}

