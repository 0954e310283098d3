import { byId, busy, button, say, shortAddress } from './ui';
import { discoverWallets, Wallet, WalletError, type ProviderDetail } from './wallet';

/**
 * Wires the page's "Connect wallet" button (`#connect`): discovers wallets by EIP-6963, lets the
 * person pick one when several announce themselves (`#providers`), connects and reports the
 * account in `#account`. `chainId()` is read at connect time. `onConnected` runs with the wallet (and again on account/chain changes).
 */
export function setupConnect(chainId: () => number, onConnected: (wallet: Wallet) => void | Promise<void>): void {
  const connectBtn = byId<HTMLButtonElement>('connect');
  const providers = byId('providers');
  const panel = byId('wallet');

  const use = async (detail: ProviderDetail) => {
    try {
      const wallet = await Wallet.connect(detail, chainId());
      providers.replaceChildren();
      connectBtn.hidden = true;
      byId('account').textContent = `Connected: ${wallet.name} · ${shortAddress(wallet.account)}`;
      byId('account').dataset.account = wallet.account;
      say('');
      wallet.onChange(() => {
        byId('account').textContent = `Connected: ${wallet.name} · ${shortAddress(wallet.account)}`;
        byId('account').dataset.account = wallet.account;
        void onConnected(wallet);
      });
      try {
        await wallet.ensureChain();
      } catch (err) {
        say((err as Error).message, 'bad');
      }
      await onConnected(wallet);
    } catch (err) {
      say(err instanceof WalletError ? err.message : `Could not connect: ${(err as Error).message}`, 'bad');
    }
  };

  connectBtn.addEventListener('click', () => {
    void busy(panel, async () => {
      say('Looking for a wallet…');
      const found = await discoverWallets();
      if (found.length === 0) {
        say('No wallet found in this browser. Install a browser wallet (for example MetaMask or Coinbase Wallet) and reload.', 'bad');
        return;
      }
      if (found.length === 1) return use(found[0]);
      say('Choose a wallet.');
      providers.replaceChildren(...found.map((d) => button(`Use ${d.info.name}`, () => void busy(panel, () => use(d)))));
      (providers.querySelector('button') as HTMLButtonElement | null)?.focus();
    });
  });
}
