import { plainToInstance, Type } from 'class-transformer';
import { IsString, MaxLength, validate, ValidateNested } from 'class-validator';
import fc from 'fast-check';
import { AppError } from '../common/errors/app-error';
import { CreateCheckoutSessionDto } from '../modules/checkout/dto/create-checkout-session.dto';
import { compiledAccepts, validateInput } from './validate';

class Body {
  @IsString()
  @MaxLength(3)
  name: string;
}

describe('validateInput (the one validation, DESIGN §4, §17)', () => {
  it('returns an instance of the DTO for a valid input', async () => {
    const v = await validateInput(Body, { name: 'abc' });
    expect(v).toBeInstanceOf(Body);
    expect(v.name).toBe('abc');
  });

  it('refuses unknown fields and bad ones with 400 invalid_request listing each field; a missing body is an empty one', async () => {
    const err = (await validateInput(Body, { name: 'abcd', extra: 1 }).catch((e: unknown) => e)) as AppError;
    expect([err.status, err.code]).toEqual([400, 'invalid_request']);
    expect((err.details!.fields as Array<{ param: string }>).map((f) => f.param).sort()).toEqual(['extra', 'name']);
    const none = (await validateInput(Body, undefined).catch((e: unknown) => e)) as AppError;
    expect((none.details!.fields as Array<{ param: string }>).map((f) => f.param)).toContain('name');
  });
});

/**
 * The compiled check (docs/decisions.md, "The runner's cost") must accept exactly what
 * class-validator accepts, or an invalid body would slip past validation: held equal over
 * generated bodies for a real DTO with custom, optional and enumerated rules.
 */
describe('the compiled check agrees with class-validator', () => {
  const valueArb = fc.oneof(
    fc.constantFrom<unknown>(undefined, null, '', '25.00', '0', '0.00', '1.1234567', 'abc', 'shop.example.com', 'https://example.com/x', 'http://localhost/x', 'custom', 'digital_goods', '2030-01-01T00:00:00Z', '01a21a16-15c2-71cb-bc5b-d7b33efa43f7', 0, 1, 100, 101, 1.5, true, [], {}, { inspectionWindowHours: 5 }),
    fc.string({ maxLength: 8 }),
    fc.integer(),
  );
  const keys = ['amount', 'description', 'redirectUrl', 'webhookUrl', 'orderId', 'shopDomain', 'escrowTemplateId', 'metadata', 'expiresAt', 'offeringId', 'quantity', 'idempotencyKey', 'extra'];
  const bodyArb = fc.dictionary(fc.constantFrom(...keys), valueArb, { maxKeys: 8 });

  async function classValidatorAccepts(input: unknown): Promise<boolean> {
    return (await validate(plainToInstance(CreateCheckoutSessionDto, input ?? {}) as object, { whitelist: true, forbidNonWhitelisted: true })).length === 0;
  }

  it('CreateCheckoutSessionDto is compiled, and both accept the same bodies', async () => {
    expect(compiledAccepts(CreateCheckoutSessionDto, { amount: '25.00', description: 'x' })).toBe(true);
    await fc.assert(
      fc.asyncProperty(fc.oneof(bodyArb, fc.record({ amount: fc.constant('25.00'), description: fc.constant('Order') }, { requiredKeys: [] })), async (body) => {
        expect(compiledAccepts(CreateCheckoutSessionDto, body)).toBe(await classValidatorAccepts(body));
      }),
      { numRuns: 3000 },
    );
  });

  it('an array, a primitive or an unknown field is left to class-validator, which refuses it', async () => {
    for (const input of [[{ amount: '25.00', description: 'x' }], 'x', 5, { amount: '25.00', description: 'x', extra: 1 }]) {
      expect(compiledAccepts(CreateCheckoutSessionDto, input)).toBe(false);
      await expect(validateInput(CreateCheckoutSessionDto, input)).rejects.toBeInstanceOf(AppError);
    }
  });

  it('a DTO with a nested DTO is not compiled (class-validator alone decides)', () => {
    class Inner {
      @IsString()
      name: string;
    }
    class Outer {
      @ValidateNested()
      @Type(() => Inner)
      inner: Inner;
    }
    expect(compiledAccepts(Outer, { inner: { name: 'a' } })).toBeUndefined();
  });
});
