import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsUUID, Max, Min } from 'class-validator';

/** Query of every list (docs/architecture.md §6): `limit` 1–100 (default 10), `starting_after` an id from the previous page. */
export class ListQueryDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 10 })
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'limit must be an integer from 1 to 100' })
  @Min(1, { message: 'limit must be an integer from 1 to 100' })
  @Max(100, { message: 'limit must be an integer from 1 to 100' })
  limit?: number;

  @ApiPropertyOptional({ description: 'Id of the last item of the previous page (its nextCursor)' })
  @IsOptional()
  @IsUUID('all', { message: 'starting_after must be an id from a previous page' })
  starting_after?: string;
}

/** The list envelope (docs/architecture.md §6), newest first. */
export interface ListPage<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** Swagger base for list responses; subclasses declare `data`. */
export class ListEnvelopeDto {
  @ApiProperty() hasMore: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'Pass as starting_after to get the next page' })
  nextCursor: string | null;
}

/** Builds a page from `limit + 1` rows fetched newest-first. */
export function toPage<R extends { id: string }, T>(rows: R[], limit: number, map: (row: R) => T): ListPage<T> {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  return { data: items.map(map), hasMore, nextCursor: hasMore ? items[items.length - 1].id : null };
}
