"""What the server and the client both use: the wire names the schema does not type
(``meta``), the handshake era's common session (``handshake``), the HTTP header rules
(``headers``), JSON Schema validation (``jsonschema``), root and file checks (``files``), and
the skills extension's file format (``skill_format``)."""
