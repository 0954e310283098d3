import { LRUCache } from 'lru-cache';
import { Injectable } from '@nestjs/common';
import { SecretBox } from '../../common/crypto/secret-box';
import { AppConfig } from '../../config/app-config';

/** How long a rotated-out secret keeps signing (docs/architecture.md §8: 24 h). */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

/** Opened secrets kept in memory per process (bounded; a worker signs for many organisations). */
const OPENED_CACHE_SIZE = 1000;

/** The sealed secret columns of an endpoint. */
export interface SealedSecrets {
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
}

/**
 * Seals and opens endpoint signing secrets (AES-256-GCM keyed from SIGNER_ENCRYPTION_KEY with the
 * purpose `webhook-signing-secret`, aad = organisation id, so a ciphertext copied to another
 * organisation's row does not open).
 */
@Injectable()
export class WebhookSecrets {
  private readonly box: SecretBox;
  private readonly opened = new LRUCache<string, string>({ max: OPENED_CACHE_SIZE });

  constructor(config: AppConfig) {
    this.box = new SecretBox(config.secret('SIGNER_ENCRYPTION_KEY'), 'webhook-signing-secret');
  }

  seal(organizationId: string, secret: string): string {
    return this.box.seal(secret, organizationId);
  }

  /**
   * The secrets that sign right now: the current one first, then the previous one while its
   * overlap lasts (`previousSecretExpiresAt > now`).
   * @throws Error when a sealed value does not open (wrong SIGNER_ENCRYPTION_KEY or altered row).
   */
  live(organizationId: string, s: SealedSecrets, now = new Date()): string[] {
    const out = [this.open(organizationId, s.secretSealed)];
    if (s.previousSecretSealed && s.previousSecretExpiresAt && s.previousSecretExpiresAt.getTime() > now.getTime()) {
      out.push(this.open(organizationId, s.previousSecretSealed));
    }
    return out;
  }

  /** Opens a sealed secret, remembering the {@link OPENED_CACHE_SIZE} most recently used (keyed by ciphertext, so a rotation misses). */
  private open(organizationId: string, sealed: string): string {
    const key = `${organizationId}|${sealed}`;
    let secret = this.opened.get(key);
    if (secret === undefined) {
      secret = this.box.open(sealed, organizationId);
      this.opened.set(key, secret);
    }
    return secret;
  }
}
