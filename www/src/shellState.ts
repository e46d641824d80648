/** The location React last committed (pathname + search), written by the shell after every
 *  commit. The step loop's settle predicate compares it with the window's location. */
export const committedLocation: { current: string } = { current: "" };
