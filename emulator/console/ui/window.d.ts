export declare const REQUEST_WINDOW: number;
export declare const TURN_WINDOW: number;
export declare function appendWindow<T>(list: readonly T[], items: readonly T[], max: number, key?: (item: T) => unknown): T[];
export declare function windowSize(search: string, fallback: number): number;
