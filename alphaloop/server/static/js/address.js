// The page's address: "#/path?query", the query carrying a view's table state (sort, filter,
// page, columns) so a reload or a shared link shows the same.

export function parseHash(hash = location.hash) {
  const [path, query = ""] = (hash || "#/sessions").split("?");
  return { path: path === "#" || path === "" || path === "#/" ? "#/sessions" : path, query: new URLSearchParams(query) };
}
// Replaces the query of the current address without a new history entry or a new render.
export function setQuery(query) {
  const { path } = parseHash();
  const q = query.toString();
  history.replaceState(null, "", path + (q ? "?" + q : ""));
}
