import type { ModuleRef } from '@nestjs/core';
import { latePort } from './late-port';

abstract class Port {
  abstract read(): string;
}

describe('latePort', () => {
  it('resolves nothing until the first call, then the provider once, across modules (strict: false)', () => {
    const provider: Port = { read: () => 'x' };
    const get = jest.fn().mockReturnValue(provider);
    const holder: { ref?: ModuleRef } = {};
    const port = latePort(() => holder.ref!, Port);
    expect(get).not.toHaveBeenCalled();
    holder.ref = { get } as unknown as ModuleRef;
    expect(port()).toBe(provider);
    expect(port()).toBe(provider);
    expect(get).toHaveBeenCalledTimes(1);
    expect(get).toHaveBeenCalledWith(Port, { strict: false });
  });

  it('a provider missing at the call throws there, and the next call tries again', () => {
    const provider: Port = { read: () => 'x' };
    const get = jest
      .fn()
      .mockImplementationOnce(() => {
        throw new Error('Nest could not find Port element');
      })
      .mockReturnValue(provider);
    const port = latePort(() => ({ get }) as unknown as ModuleRef, Port);
    expect(() => port()).toThrow('could not find');
    expect(port()).toBe(provider);
  });
});
