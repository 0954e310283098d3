import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { ClassConstructor, plainToInstance } from 'class-transformer';
import { getMetadataStorage, validate, ValidationTypes } from 'class-validator';
import type { ValidationArguments, ValidatorConstraintInterface } from 'class-validator';
import { AppError } from '../common/errors/app-error';
import { validationFields } from '../common/validation/validation-errors';

/** The options every validation runs with: unknown fields are refused, not dropped (DESIGN §4). */
const OPTIONS = { whitelist: true, forbidNonWhitelisted: true } as const;

/** One property's rules, as class-validator's executor applies them (ValidationExecutor.performValidations). */
interface CompiledProperty {
  name: string;
  /** `@IsOptional` / `@ValidateIf`: the property is checked only when every condition holds. */
  conditions: Array<(object: object, value: unknown) => boolean>;
  rules: Array<{ validateIf?: (object: object, value: unknown) => boolean; constraints: unknown[]; validators: ValidatorConstraintInterface[] }>;
}

/** A DTO's rules read from class-validator's metadata once: the allowed property names and each property's rules. */
interface CompiledDto {
  allowed: Set<string>;
  properties: CompiledProperty[];
}

/** {@link compile}'s memo; null marks a DTO with a rule the compiled check does not cover (class-validator alone runs). */
const compiled = new WeakMap<object, CompiledDto | null>();

/**
 * Compiles `dto`'s class-validator metadata (the same metadata, groups and inheritance as
 * `validate` reads) into a plain check, once per class. Covered: custom validations (every
 * built-in decorator is one), `@IsOptional`/`@ValidateIf` conditions, `@Allow`; anything else
 * (nested DTOs, `each`, `@IsDefined`, promise or async validators, a class without rules) → null.
 */
function compile(dto: ClassConstructor<object>): CompiledDto | null {
  if (compiled.has(dto)) return compiled.get(dto)!;
  const storage = getMetadataStorage();
  const metadatas = storage.getTargetValidationMetadatas(dto, undefined as unknown as string, false, false, undefined);
  let plan: CompiledDto | null = metadatas.length > 0 ? { allowed: new Set(), properties: [] } : null;
  const byName = new Map<string, CompiledProperty>();
  for (const m of metadatas) {
    if (!plan) break;
    plan.allowed.add(m.propertyName);
    let property = byName.get(m.propertyName);
    if (!property) {
      property = { name: m.propertyName, conditions: [], rules: [] };
      byName.set(m.propertyName, property);
      plan.properties.push(property);
    }
    if (m.type === ValidationTypes.WHITELIST) continue;
    if (m.type === ValidationTypes.CONDITIONAL_VALIDATION && !m.each) {
      property.conditions.push(m.constraints[0] as (object: object, value: unknown) => boolean);
      continue;
    }
    const constraints = m.type === ValidationTypes.CUSTOM_VALIDATION && !m.each ? storage.getTargetValidatorConstraints(m.constraintCls) : [];
    if (constraints.length === 0 || constraints.some((c) => c.async)) {
      plan = null;
      break;
    }
    property.rules.push({ validateIf: m.validateIf, constraints: m.constraints, validators: constraints.map((c) => c.instance) });
  }
  compiled.set(dto, plan);
  return plan;
}

/**
 * Whether class-validator would accept `instance` (whitelist with forbidNonWhitelisted, every rule)
 * by the compiled check; false also when a validator answers a promise (class-validator decides).
 */
function passes(plan: CompiledDto, dto: ClassConstructor<object>, instance: object): boolean {
  // An array or a primitive is not an instance of the DTO: class-validator refuses it, with its own message.
  if (typeof instance !== 'object' || instance === null || instance.constructor !== dto) return false;
  for (const key of Object.keys(instance)) if (!plan.allowed.has(key)) return false;
  const object = instance as Record<string, unknown>;
  for (const p of plan.properties) {
    const value = object[p.name];
    let checked = true;
    for (const condition of p.conditions) if (!condition(instance, value)) checked = false;
    if (!checked) continue;
    for (const rule of p.rules) {
      if (rule.validateIf && !rule.validateIf(instance, value)) continue;
      const args: ValidationArguments = { targetName: instance.constructor.name, property: p.name, object: instance, value, constraints: rule.constraints };
      for (const validator of rule.validators) {
        const ok: unknown = validator.validate(value, args);
        if (!ok || typeof (ok as { then?: unknown }).then === 'function') return false;
      }
    }
  }
  return true;
}

/**
 * Whether `dto`'s compiled check accepts `input` as class-validator would (whitelist,
 * forbidNonWhitelisted); undefined when the DTO is not compiled. For tests that hold the two equal.
 */
export function compiledAccepts<T extends object>(dto: ClassConstructor<T>, input: unknown): boolean | undefined {
  const plan = compile(dto);
  return plan ? passes(plan, dto, plainToInstance(dto, input ?? {}) as object) : undefined;
}

/**
 * The one validation of a declared input (DESIGN §17), for every transport: REST (through
 * {@link KernelValidationPipe}), MCP tools and A2A skills. The DTO's class-validator rules are
 * compiled once per class into a plain check ({@link compile}); an input it accepts is valid and
 * no class-validator run is paid. Any other input, and DTOs the compiled check does not cover, go
 * through class-validator with whitelist and forbidNonWhitelisted, which builds the error body, so
 * refusals are the same as before, field for field (docs/decisions.md, "The runner's cost").
 * @returns the input as an instance of `dto` (nested DTOs and `@Type` conversions applied).
 * @throws AppError 400 invalid_request with `details.fields = [{param, message}]` (DESIGN §4).
 */
export async function validateInput<T extends object>(dto: ClassConstructor<T>, input: unknown): Promise<T> {
  const instance = plainToInstance(dto, input ?? {}) as T;
  const plan = compile(dto);
  if (plan && passes(plan, dto, instance)) return instance;
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
