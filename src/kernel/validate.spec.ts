import { IsString, MaxLength } from 'class-validator';
import { AppError } from '../common/errors/app-error';
import { validateInput } from './validate';

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
