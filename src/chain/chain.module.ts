import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ChainAccess } from './chain-access.service';
import { ChainCursor } from './chain-cursor.entity';
import { ChainCursors } from './chain-cursors.repository';

/**
 * The chain room (DESIGN §17, §18; STYLE.md "Layout"): the one JSON-RPC provider and contract
 * gateway ({@link ChainAccess}) and the indexers' cursors ({@link ChainCursors}). Domains import it;
 * it imports no domain.
 */
@Module({
  imports: [TypeOrmModule.forFeature([ChainCursor])],
  providers: [ChainAccess, ChainCursors],
  exports: [ChainAccess, ChainCursors],
})
export class ChainModule {}
