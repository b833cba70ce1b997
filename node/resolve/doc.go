// Package resolve carries out a person's decision about a conflict copy
// (`weft resolve`, POST /v1/resolve; docs/conflicts.md): keep what holds
// the name (the copy goes), keep the copy's content at the name (the copy
// goes), keep both (the copy becomes an ordinary file beside it), or take
// a file's content as the result (the copy goes).
//
// The decision is written to the folder like any edit and recorded as a
// new version that supersedes every head of the name this device had
// applied, so every device receives it as the resolution rather than as
// another conflict. It runs with the vault's scans held, from the check of
// the copy to the record. The package reaches the vault through Vault and
// the folder through folder.FS, so its tests run on an in-memory folder.
package resolve
