import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../../../database/transaction';

/** A stored console session (docs/architecture.md §19); tokens are kept only as SHA-256 digests. */
export interface ConsoleSessionRow {
  id: string;
  address: string;
  chainId: number;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
}

/** All I/O of SIWE nonces and console sessions (docs/architecture.md §19). */
@Injectable()
export class ConsoleRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /** Stores a fresh nonce valid until `expiresAt`, and drops nonces expired an hour ago or more. */
  async insertNonce(nonce: string, expiresAt: Date): Promise<void> {
    await this.em.query(`INSERT INTO console_nonces (nonce, expires_at) VALUES ($1, $2)`, [nonce, expiresAt]);
    await this.em.query(`DELETE FROM console_nonces WHERE expires_at < now() - interval '1 hour'`);
  }

  /** Marks the nonce used if it exists, is unused and unexpired; one statement, so a nonce is consumed once. @returns whether it was consumed now. */
  async consumeNonce(nonce: string): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `WITH u AS (UPDATE console_nonces SET used_at = now() WHERE nonce = $1 AND used_at IS NULL AND expires_at > now() RETURNING nonce) SELECT * FROM u`,
      [nonce],
    );
    return rows.length === 1;
  }

  async insertSession(s: { id: string; tokenHash: Buffer; address: string; chainId: number; clientAddress: string; expiresAt: Date }): Promise<void> {
    await this.em.query(
      `INSERT INTO console_sessions (id, token_hash, address, chain_id, client_address, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [s.id, s.tokenHash, s.address, s.chainId, s.clientAddress, s.expiresAt],
    );
  }

  /** The live session (unrevoked, unexpired by the database clock) with this token digest, or null. */
  async findLiveSession(tokenHash: Buffer): Promise<ConsoleSessionRow | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(
      `SELECT id, address, chain_id, created_at, expires_at, revoked_at FROM console_sessions
        WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > now()`,
      [tokenHash],
    );
    if (!rows.length) return null;
    const r = rows[0];
    return {
      id: r.id as string,
      address: r.address as string,
      chainId: r.chain_id as number,
      createdAt: r.created_at as Date,
      expiresAt: r.expires_at as Date,
      revokedAt: (r.revoked_at as Date | null) ?? null,
    };
  }

  /** Revokes a session (keeps the first revocation time). */
  async revokeSession(id: string): Promise<void> {
    await this.em.query(`UPDATE console_sessions SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1`, [id]);
  }
}
