// Package home is the layout of a weft home directory: the device key, the
// vaults this device belongs to (each with its root secret, its folder and
// its database directory), and the address of the running agent's local
// API. It knows files and paths only; node/ and cmd/weft give them meaning.
package home
