// @radix-ui/primitive's declarations (under @assistant-ui/react) name Node's `setImmediate`, which
// lib DOM lacks: declared here so `skipLibCheck: false` checks every package's types, ours included.
declare function setImmediate(callback: () => void): unknown;
