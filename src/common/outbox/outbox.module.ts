import { Global, Module } from '@nestjs/common';
import { EventsService } from './events.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OutboxEvent } from './outbox-event.entity';

@Global()
@Module({ imports: [TypeOrmModule.forFeature([OutboxEvent])], providers: [EventsService], exports: [EventsService] })
export class OutboxModule {}
