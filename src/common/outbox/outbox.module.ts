import { Global, Module } from '@nestjs/common';
import { EventsService } from './events.service';
import { OutboxRepository } from './outbox.repository';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OutboxEvent } from './outbox-event.entity';

@Global()
@Module({ imports: [TypeOrmModule.forFeature([OutboxEvent])], providers: [EventsService, OutboxRepository], exports: [EventsService, OutboxRepository] })
export class OutboxModule {}
