import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * One stored A2A task (table a2a_tasks, migration A2a; docs/architecture.md §14): the A2A v1.0
 * task JSON, keyed by its owner (the credential that created it) and the task id.
 */
@Entity('a2a_tasks')
export class A2aTask {
  @PrimaryColumn('text') owner: string;
  @PrimaryColumn('text') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('uuid', { name: 'agent_id', nullable: true }) agentId: string | null;
  @Column('text', { name: 'context_id' }) contextId: string;
  @Column('text') state: string;
  @Column('jsonb') task: Record<string, unknown>;
  @Column('timestamptz', { name: 'created_at' }) createdAt: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt: Date;
}
