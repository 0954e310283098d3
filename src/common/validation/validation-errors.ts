import { ValidationError } from 'class-validator';

/**
 * Flattens class-validator errors into `details.fields = [{param, message}]` (nested params
 * dotted), the shape of every validation error body (docs/architecture.md §4). Used by the REST
 * validation pipe and the MCP tools, so both answer a bad field the same way.
 */
export function validationFields(errors: ValidationError[], parent = ''): Array<{ param: string; message: string }> {
  return errors.flatMap((e) => {
    const param = parent ? `${parent}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {}).map((message) => ({ param, message }));
    return [...own, ...validationFields(e.children ?? [], param)];
  });
}
