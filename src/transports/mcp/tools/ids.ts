import type { ToolParam } from '../mcp-tool';

export { requireUuid } from '../../../common/http/path-id';

/** A path id as REST takes it: any string; one that is not a UUID is simply not found (as REST's 404). */
export const idParam = (what: string): ToolParam => ({ description: `The ${what} id` });

/** `{id}`: the one path parameter of a tool over `/<things>/{id}…`. */
export const idParams = (what: string) => ({ id: idParam(what) }) as const;
