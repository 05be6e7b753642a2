"""``mcpgen stubs``: typed Python stubs for the tools, prompts and resource templates of a
live server (or a saved description of one).

* :mod:`~mcpgen.stubs.model`: what a server offers, described (through the runtime's
  ``Client``, or from saved JSON) and made into the generator's intermediate model;
* :mod:`~mcpgen.stubs.schema`: a server's JSON Schemas prepared for typing;
* :mod:`~mcpgen.stubs.render`: the model printed into one formatted module, and the drift
  between two such modules (``--check``);
* :mod:`~mcpgen.stubs.guard`: the last guard, refusing a module whose statements are not
  the template's.

It sits beside :mod:`mcpgen.codegen`, whose model, filters and formatter it uses, so that the
protocol generator itself never imports the runtime.
"""
