import { AgentHooks } from './agent-hooks.service';

describe('AgentHooks (the payments module fails unsigned payments when an agent stops spending)', () => {
  it('a process without the payments listener refuses to start, and refuses the change', async () => {
    const hooks = new AgentHooks();
    expect(() => hooks.onApplicationBootstrap()).toThrow(/PaymentsModule/);
    await expect(hooks.spendingStopped('a1', 'agent_paused')).rejects.toThrow(/PaymentsModule/);
  });

  it('runs the one registered listener with the agent and the reason; a second listener is refused', async () => {
    const hooks = new AgentHooks();
    const seen: string[] = [];
    hooks.onSpendingStopped(async (agentId, reason) => {
      seen.push(`${agentId}:${reason}`);
    });
    expect(() => hooks.onApplicationBootstrap()).not.toThrow();
    await hooks.spendingStopped('a1', 'signer_disabled');
    expect(seen).toEqual(['a1:signer_disabled']);
    expect(() => hooks.onSpendingStopped(async () => undefined)).toThrow(/registered already/);
  });
});
