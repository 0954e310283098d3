import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Authenticated encryption of small secrets at rest (webhook signing secrets; docs/architecture.md §8, §10):
 * AES-256-GCM with a key derived by HKDF-SHA256 from `SIGNER_ENCRYPTION_KEY` and a purpose
 * label, so one configured key yields independent keys per use. Sealed text is
 * `v1.<iv>.<ciphertext>.<tag>` (base64url); `aad` binds a ciphertext to its row (e.g. the
 * organisation id) so it cannot be moved to another row.
 */
export class SecretBox {
  private readonly key: Buffer;

  /** @throws Error when `keyMaterial` is shorter than 32 characters (the env schema's minimum). */
  constructor(keyMaterial: string, purpose: string) {
    if (keyMaterial.length < 32) throw new Error('SecretBox key material must be at least 32 characters');
    this.key = Buffer.from(hkdfSync('sha256', Buffer.from(keyMaterial, 'utf8'), Buffer.from('pcp-secret-box'), Buffer.from(purpose, 'utf8'), 32));
  }

  /** Encrypts UTF-8 `plaintext`; a fresh random IV each call, so equal inputs give different outputs. */
  seal(plaintext: string, aad = ''): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), ciphertext.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  /**
   * Decrypts text made by {@link seal} with the same key, purpose and `aad`.
   * @throws Error when the text is malformed, was altered, or was sealed under another key or aad.
   */
  open(sealed: string, aad = ''): string {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== VERSION) throw new Error('sealed secret has an unknown format');
    const [, iv, ciphertext, tag] = parts.map((p) => Buffer.from(p, 'base64url'));
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new Error('sealed secret has an unknown format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, iv);
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  }
}
