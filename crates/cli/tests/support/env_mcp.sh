#!/bin/sh
# A minimal MCP server on stdio with one tool, `env`, whose result lists the
# names of the variables in the server's own environment. Tests start it to
# see what a child process inherits. One JSON-RPC message per line.
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | grep -o '"id":[0-9]*' | head -n 1 | cut -d: -f2)
  case "$line" in
    *'"method":"initialize"'*)
      version=$(printf '%s\n' "$line" | sed -n 's/.*"protocolVersion":"\([^"]*\)".*/\1/p')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"env","version":"0"}}}\n' "$id" "$version"
      ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"env","inputSchema":{"type":"object"}}]}}\n' "$id"
      ;;
    *'"method":"tools/call"'*)
      names=$(awk 'BEGIN { n = 0; for (k in ENVIRON) if (k ~ /^[A-Za-z_][A-Za-z0-9_]*$/) { printf "%s\"%s\"", (n++ ? "," : ""), k } }')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"env"}],"structuredContent":{"names":[%s]},"isError":false}}\n' "$id" "$names"
      ;;
    *'"id":'*)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}\n' "$id"
      ;;
  esac
done
