import type { ClassConstructor } from 'class-transformer';
import { targetConstructorToSchema } from 'class-validator-jsonschema';
import type { IdempotencyMode } from '../../kernel/operation';

/** The JSON Schema subset tools/list shows (draft 7 object schema). */
export interface ToolJsonSchema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, ToolJsonSchema>;
  required?: string[];
  items?: ToolJsonSchema;
  [key: string]: unknown;
}

/** A tool argument that is a path or query parameter of its REST twin (e.g. `id`), not part of the operation's body. */
export interface ToolParam {
  readonly description: string;
  /** Absent = required (a REST path parameter always is). */
  readonly optional?: boolean;
}

/** Swagger's per-property metadata key (`@ApiProperty`), read for descriptions only. */
const API_MODEL_PROPERTIES = 'swagger/apiModelProperties';

/** The JSON types a permissive schema keeps; anything else (a `$ref`, an `anyOf`) becomes "any value". */
const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

/** The JSON type of a property from its reflected TypeScript type, when class-validator metadata names none. */
function designType(dto: ClassConstructor<object>, property: string): string | undefined {
  const t = Reflect.getMetadata('design:type', dto.prototype as object, property) as unknown;
  return t === String ? 'string' : t === Number ? 'number' : t === Boolean ? 'boolean' : t === Array ? 'array' : undefined;
}

/** A property's schema kept to its type (and an array's item type): no pattern, bound or enum, so the kernel's validation is the one that refuses. */
function permissiveProperty(full: Record<string, unknown> | undefined, dto: ClassConstructor<object>, property: string, optional: boolean): ToolJsonSchema {
  const type = typeof full?.type === 'string' && JSON_TYPES.has(full.type) ? full.type : designType(dto, property);
  const out: ToolJsonSchema = {};
  if (type) out.type = optional ? [type, 'null'] : type;
  if (type === 'array') {
    const items = full?.items as Record<string, unknown> | undefined;
    out.items = typeof items?.type === 'string' && JSON_TYPES.has(items.type) && items.type !== 'object' ? { type: items.type } : {};
  }
  const swagger = Reflect.getMetadata(API_MODEL_PROPERTIES, dto.prototype as object, property) as { description?: string; enum?: unknown } | undefined;
  const enumValues = Array.isArray(swagger?.enum) ? (swagger.enum as unknown[]) : undefined;
  const text = swagger?.description && !/[.!?)]$/.test(swagger.description) ? `${swagger.description}.` : swagger?.description;
  const description = [text, enumValues ? `One of: ${enumValues.join(', ')}.` : undefined].filter(Boolean).join(' ');
  if (description) out.description = description;
  return out;
}

/**
 * The schema of an operation's input DTO as MCP's tools/list shows it (DESIGN §15, §17: derived
 * from the operation's DTO): class-validator's metadata read by `class-validator-jsonschema`, kept
 * to each property's JSON type and the required fields, with the `@ApiProperty` description (and
 * enum values as text). Deliberately permissive (an optional field also admits null, no pattern,
 * bound, enum or `additionalProperties: false`): a host that checks arguments against it never
 * refuses what the kernel's `validateInput` would accept, and what the kernel refuses gets the
 * error body REST gives.
 */
export function permissiveDtoSchema(dto: ClassConstructor<object>): { properties: Record<string, ToolJsonSchema>; required: string[] } {
  const full = targetConstructorToSchema(dto) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  const required = full.required ?? [];
  const properties: Record<string, ToolJsonSchema> = {};
  for (const name of Object.keys(full.properties ?? {})) properties[name] = permissiveProperty(full.properties?.[name], dto, name, !required.includes(name));
  return { properties, required: [...required] };
}

/** `idempotencyKey`'s description: the tool form of REST's Idempotency-Key header (DESIGN §5). */
const IDEMPOTENCY_KEY: ToolJsonSchema = { type: 'string', description: 'Same key and arguments return the first result again for 24 h (the REST Idempotency-Key)' };

/**
 * A tool's input schema (tools/list, JSON Schema draft 7), derived from its operation: the input
 * DTO's fields ({@link permissiveDtoSchema}), the REST path/query parameters the tool takes as
 * arguments (`params`, strings), and `idempotencyKey` unless the operation takes no key
 * (`idempotency: 'none'`), required when its mode requires one (`required`, `row-owned`).
 */
export function toolInputSchema(op: { input?: ClassConstructor<unknown>; idempotency: IdempotencyMode }, params: Readonly<Record<string, ToolParam>> = {}): ToolJsonSchema {
  const body = op.input ? permissiveDtoSchema(op.input as ClassConstructor<object>) : { properties: {}, required: [] };
  const properties: Record<string, ToolJsonSchema> = {};
  const required: string[] = [];
  for (const [name, p] of Object.entries(params)) {
    properties[name] = { type: 'string', description: p.description };
    if (!p.optional) required.push(name);
  }
  Object.assign(properties, body.properties);
  required.push(...body.required.filter((n) => !required.includes(n)));
  if (op.idempotency !== 'none') {
    properties.idempotencyKey = IDEMPOTENCY_KEY;
    if (op.idempotency === 'required' || op.idempotency === 'row-owned') required.push('idempotencyKey');
  }
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}) };
}
