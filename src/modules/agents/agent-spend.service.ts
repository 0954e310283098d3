import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../../database/transaction';
import type { AgentRow, AgentUsage, PayeeTarget } from './agent.types';
import { agentUsage, AgentsRepository } from './agents.repository';
import { ChainAccess } from '../../chain/chain-access.service';
import { ChainCursors } from '../../chain/chain-cursors.repository';
import { readSignerBalance, type SignerBalance } from './signer-balance';

/**
 * What spending modules (payments, agent escrows) need from agents, through a service
 * (docs/architecture.md §13): the agent row, the row lock that serialises its reservations, its usage in
 * the policy windows, and payee handle resolution. Runs in the caller's transaction.
 */
@Injectable()
export class AgentSpendGate {
  constructor(
    private readonly repo: AgentsRepository,
    private readonly txHost: TransactionHost,
    private readonly chain: ChainAccess,
    private readonly cursors: ChainCursors,
  ) {}

  find(agentId: string): Promise<AgentRow | null> {
    return this.repo.find(agentId);
  }

  /** The agent under FOR UPDATE; call inside the reservation's transaction. */
  lock(agentId: string): Promise<AgentRow | null> {
    return this.repo.lock(agentId);
  }

  /**
   * Payments pending/submitted/succeeded since the window starts (base units), and the open
   * reservations not in `settledNonces`, succeeded ones above `trustedBlock` included ({@link readSignerBalance}).
   */
  usage(agentId: string, dayStart: Date, monthStart: Date, settledNonces: string[] = [], trustedBlock: number | null = null): Promise<AgentUsage> {
    return agentUsage((this.txHost as TxHost).tx, agentId, dayStart, monthStart, settledNonces, trustedBlock);
  }

  /** The signer's balance inputs for the spend check; call with no transaction open ({@link readSignerBalance}). */
  signerBalance(signer: string): Promise<SignerBalance> {
    return readSignerBalance(this.chain, this.cursors, signer);
  }

  /** A payee handle (organisation handle or agent slug, case-insensitive), or null. */
  resolveHandle(handle: string): Promise<PayeeTarget | null> {
    return this.repo.resolveHandle(handle);
  }
}
