import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { ClassConstructor, plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { AppError } from '../common/errors/app-error';
import { validationFields } from '../common/validation/validation-errors';

/** The options every validation runs with: unknown fields are refused, not dropped (DESIGN §4). */
const OPTIONS = { whitelist: true, forbidNonWhitelisted: true } as const;

/**
 * The one validation of a declared input (DESIGN §17), for every transport: REST (through
 * {@link KernelValidationPipe}), MCP tools and A2A skills. Today class-transformer + class-validator
 * with whitelist and forbidNonWhitelisted; a compiled validator can replace the body of this
 * function without touching a caller.
 * @returns the input as an instance of `dto` (nested DTOs and `@Type` conversions applied).
 * @throws AppError 400 invalid_request with `details.fields = [{param, message}]` (DESIGN §4).
 */
export async function validateInput<T extends object>(dto: ClassConstructor<T>, input: unknown): Promise<T> {
  const instance = plainToInstance(dto, input ?? {}) as T;
  const errors = await validate(instance, OPTIONS);
  if (errors.length > 0) {
    const fields = validationFields(errors);
    throw new AppError('invalid_request', fields.map((f) => f.message).join('; ') || 'Invalid request', { fields });
  }
  return instance;
}

const PRIMITIVES = new Set<unknown>([String, Boolean, Number, Array, Object]);

/**
 * The REST validation pipe (the design card's shape, DESIGN §17): a thin call into
 * {@link validateInput} for every body, query and parameter typed by a DTO class; primitives pass
 * through unchanged (path ids are checked by their own pipes).
 */
@Injectable()
export class KernelValidationPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    const metatype = metadata.metatype;
    if (metadata.type === 'custom' || !metatype || PRIMITIVES.has(metatype)) return value;
    return validateInput(metatype as ClassConstructor<object>, value);
  }
}
