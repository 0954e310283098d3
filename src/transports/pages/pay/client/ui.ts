/** Small DOM helpers of the hosted pages' script (docs/architecture.md §16); no framework. */

/** The element with `id`; throws when the page lacks it (a render/script mismatch). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} missing`);
  return el as T;
}

/** Writes `text` to the page's aria-live region (`#message`), tone ok | bad | '' (neutral). */
export function say(text: string, tone: 'ok' | 'bad' | '' = ''): void {
  const el = byId('message');
  el.textContent = text;
  if (tone) el.dataset.tone = tone;
  else delete el.dataset.tone;
}

/** A real `<button type="button">` with text and a click handler (keyboard-usable by default). */
export function button(text: string, onClick: () => void, opts: { id?: string; kind?: 'primary' | 'danger' } = {}): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  if (opts.id) b.id = opts.id;
  if (opts.kind) b.className = opts.kind;
  b.addEventListener('click', onClick);
  return b;
}

/** `0x1234…abcd` for display. */
export const shortAddress = (a: string): string => `${a.slice(0, 6)}…${a.slice(-4)}`;

/** Disables every button in `root` while `work` runs (no double submit), then re-enables them. */
export async function busy<T>(root: HTMLElement, work: () => Promise<T>): Promise<T> {
  const buttons = Array.from(root.querySelectorAll('button'));
  buttons.forEach((b) => (b.disabled = true));
  root.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } finally {
    buttons.forEach((b) => (b.disabled = false));
    root.removeAttribute('aria-busy');
  }
}

export const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
