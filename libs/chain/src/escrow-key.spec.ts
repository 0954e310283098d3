import { escrowKeyFromId, escrowKeyParts, idFromEscrowKey, MAX_ESCROW_ATTEMPT } from './escrow-key';

describe('escrowKeyFromId / idFromEscrowKey', () => {
  const uuid = '0190f3c1-7a2b-7c3d-8e4f-a1b2c3d4e5f6';

  it('left-pads the 16 UUID bytes to a lowercase bytes32', () => {
    expect(escrowKeyFromId(uuid)).toBe(`0x${'0'.repeat(32)}0190f3c17a2b7c3d8e4fa1b2c3d4e5f6`);
    expect(escrowKeyFromId(uuid.toUpperCase())).toBe(escrowKeyFromId(uuid));
  });

  it('round-trips to the lowercase hyphenated UUID', () => {
    expect(idFromEscrowKey(escrowKeyFromId(uuid))).toBe(uuid);
    expect(idFromEscrowKey(escrowKeyFromId(uuid).toUpperCase().replace('0X', '0x'))).toBe(uuid);
  });

  it.each(['', 'not-a-uuid', '0190f3c17a2b7c3d8e4fa1b2c3d4e5f6', `${uuid}0`])('rejects %p', (bad) => {
    expect(() => escrowKeyFromId(bad)).toThrow(TypeError);
  });

  it('rejects keys that are not 32 bytes or were not derived from a UUID', () => {
    expect(() => idFromEscrowKey('0x1234')).toThrow(TypeError);
    expect(() => idFromEscrowKey(`0x01${'0'.repeat(30)}0190f3c17a2b7c3d8e4fa1b2c3d4e5f6`)).toThrow(/not derived from a UUID/);
  });

  it('puts the escrow attempt in bytes 12-15; attempt 0 is the plain padded UUID', () => {
    expect(escrowKeyFromId(uuid, 0)).toBe(escrowKeyFromId(uuid));
    expect(escrowKeyFromId(uuid, 1)).toBe(`0x${'0'.repeat(24)}000000010190f3c17a2b7c3d8e4fa1b2c3d4e5f6`);
    expect(escrowKeyFromId(uuid, 1)).not.toBe(escrowKeyFromId(uuid, 2));
    for (const attempt of [0, 1, 255, 256, 65_536, MAX_ESCROW_ATTEMPT]) {
      expect(escrowKeyParts(escrowKeyFromId(uuid, attempt))).toEqual({ id: uuid, attempt });
      expect(idFromEscrowKey(escrowKeyFromId(uuid, attempt))).toBe(uuid);
    }
  });

  it.each([-1, 1.5, MAX_ESCROW_ATTEMPT + 1, Number.NaN])('rejects attempt %p', (attempt) => {
    expect(() => escrowKeyFromId(uuid, attempt)).toThrow(TypeError);
  });
});
