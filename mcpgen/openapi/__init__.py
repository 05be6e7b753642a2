"""``mcpgen openapi``: an OpenAPI document (3.0, 3.1 or Swagger 2.0) made into a typed MCP
server project.

The generator reads the document (:mod:`.loader`: files, URLs, ``$ref`` s), brings it to one
shape (:mod:`.normalize`: OpenAPI 3.1 with JSON Schema 2020-12), applies overlays
(:mod:`.overlay`), decides every tool (:mod:`.operations`: names, arguments, schemas,
curation, pagination) and writes the project (:mod:`.project`). The generated server calls
the API through :mod:`mcpgen.openapi.runtime`, the only part of this package it imports.
"""
