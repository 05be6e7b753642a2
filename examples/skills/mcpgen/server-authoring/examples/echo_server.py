"""The smallest useful mcpgen server: one tool, served over stdio."""

from mcpgen import Server

server = Server("echo")


@server.tool
def echo(text: str) -> str:
    "Return the text unchanged."
    return text


if __name__ == "__main__":
    server.run()
