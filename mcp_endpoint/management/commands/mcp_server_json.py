"""Write the server.json that publishes this server in the MCP Registry."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from mcp_endpoint.wire.server_json import ServerJsonError, server_json


class Command(BaseCommand):
    help = "Print (or write) server.json for the MCP Registry, from MCP_PUBLIC_URL / MCP_REGISTRY_NAME and settings."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", help="the public URL of the MCP endpoint (default: MCP_PUBLIC_URL)")
        parser.add_argument("--name", help="reverse-DNS registry name, e.g. com.example/prompts (default: "
                                           "MCP_REGISTRY_NAME, or derived from the URL's host)")
        parser.add_argument("--output", "-o", help="write to this file instead of standard output")

    def handle(self, *args, **options) -> None:
        try:
            document = server_json(options["url"], name=options["name"])
        except ServerJsonError as exc:
            raise CommandError(str(exc)) from exc
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {options['output']}")
        else:
            self.stdout.write(text, ending="")
