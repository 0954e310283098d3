/**
 * Rows `[operation name, route handler]` of `controller`, for table-driven checks of what each route
 * states (`@Runs`/`@Reads`, read back with `routeOperation(handler)`): `operations` maps a handler
 * method of the controller (checked by the compiler) to the operation name its route must state.
 */
export function routesOf<C extends { prototype: object }>(controller: C, operations: { [K in keyof C['prototype'] & string]?: string }): Array<[operation: string, handler: object]> {
  const handlers = controller.prototype as Record<string, object>;
  return Object.entries(operations).map(([method, name]) => [name as string, handlers[method]]);
}
