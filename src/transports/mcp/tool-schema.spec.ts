import { ListQueryDto } from '../../common/http/list.dto';
import { CreateInvoiceDto } from '../../modules/invoices/dto/invoice.dto';
import { CreateOfferingDto } from '../../modules/offerings/dto/offering.dto';
import { toolInputSchema } from './tool-schema';

/** A tool's input schema is derived from its operation (DESIGN §15, §17), permissive: types and required fields only. */
describe('toolInputSchema', () => {
  it('takes the DTO fields with their types, required fields and Swagger descriptions, and no pattern, bound or enum', () => {
    const schema = toolInputSchema({ input: CreateOfferingDto, idempotency: 'optional' });
    expect(schema.required).toEqual(['name', 'amount']);
    expect(Object.keys(schema.properties ?? {})).toEqual(['name', 'description', 'amount', 'escrowTemplateId', 'active', 'metadata', 'idempotencyKey']);
    expect(schema.properties?.name).toEqual({ type: 'string' });
    expect(schema.properties?.amount).toMatchObject({ type: 'string', description: expect.stringContaining('decimal text') });
    // Optional fields admit null (as class-validator's @IsOptional does); enum values are only described.
    expect(schema.properties?.escrowTemplateId).toEqual({ type: ['string', 'null'], description: expect.stringContaining('One of: freelance, physical, digital, custom.') });
    expect(JSON.stringify(schema)).not.toMatch(/"(pattern|minLength|maxLength|minimum|maximum|enum|additionalProperties)"/);
  });

  it('adds path parameters, and idempotencyKey by the operation mode (required, optional, absent for none)', () => {
    const required = toolInputSchema({ input: CreateInvoiceDto, idempotency: 'required' }, { id: { description: 'The invoice id' } });
    expect(required.required).toEqual(['id', 'customer', 'lineItems', 'idempotencyKey']);
    expect(required.properties?.id).toEqual({ type: 'string', description: 'The invoice id' });
    expect(required.properties?.lineItems).toEqual({ type: 'array', items: {} });
    expect(toolInputSchema({ idempotency: 'row-owned' }).required).toEqual(['idempotencyKey']);
    expect(toolInputSchema({ idempotency: 'optional' }, { id: { description: 'x', optional: true } })).toEqual({
      type: 'object',
      properties: { id: { type: 'string', description: 'x' }, idempotencyKey: expect.objectContaining({ type: 'string' }) },
    });
    const read = toolInputSchema({ input: ListQueryDto, idempotency: 'none' });
    expect(read).toEqual({ type: 'object', properties: { limit: { type: ['integer', 'null'] }, starting_after: expect.objectContaining({ type: ['string', 'null'] }) } });
  });
});
