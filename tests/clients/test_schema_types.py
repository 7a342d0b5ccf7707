"""The TypeScript a page generates from /api/schema/ (openapi-typescript) is the AI SDK's
own, with no cast, checked by `tsc --strict` (schema-types.ts): the model history is
assignable to `ModelMessage[]`, a render request may leave out what has a default, a
render's timeline is typed and every tool's part is one of a message's parts. The schema
is the one drf-spectacular generates in this process; no server is needed."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from io import StringIO
from pathlib import Path

from django.core.management import call_command

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
TSC_STRICT = (
    *("--noEmit", "--strict", "--skipLibCheck", "--types", "node", "--target", "es2022"),
    *("--module", "nodenext", "--moduleResolution", "nodenext"),
)

# What the schema said before ModelMessage was a union by role: one object, its role one
# of three, its content text or any part.
ONE_OBJECT_MODEL_MESSAGE = {
    "type": "object",
    "properties": {
        "role": {"type": "string", "enum": ["user", "assistant", "tool"]},
        "content": {
            "oneOf": [
                {"type": "string"},
                {
                    "type": "array",
                    "items": {
                        "oneOf": [
                            {"$ref": "#/components/schemas/ModelTextContent"},
                            {"$ref": "#/components/schemas/ModelToolCall"},
                            {"$ref": "#/components/schemas/ModelToolResult"},
                        ]
                    },
                },
            ]
        },
    },
    "required": ["role", "content"],
}


def the_schema() -> dict:
    out = StringIO()
    call_command("spectacular", "--format", "openapi-json", stdout=out)
    return json.loads(out.getvalue())


def type_check(schema: dict) -> subprocess.CompletedProcess:
    """schema-types.ts against the client generated from ``schema``."""
    with tempfile.TemporaryDirectory(dir=HERE, prefix=".schema-types-") as folder:
        work = Path(folder)  # under tests/clients: `ai` resolves from its node_modules
        (work / "schema.json").write_text(json.dumps(schema))
        shutil.copy(HERE / "schema-types.ts", work / "schema-types.ts")
        generated = subprocess.run(
            [str(BIN / "openapi-typescript"), "schema.json", "-o", "schema.d.ts"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert generated.returncode == 0, generated.stdout + generated.stderr
        return subprocess.run(
            [str(BIN / "tsc"), *TSC_STRICT, "schema-types.ts"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=300,
        )


def test_the_generated_types_are_the_sdks_without_a_cast(node):
    checked = type_check(the_schema())

    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_model_message_of_one_object_is_not_the_sdks(node):
    """The control: the schema ModelMessage had, one object with a role of three, is not
    assignable to the SDK's ModelMessage[] (TS2322), so the check above can fail."""
    schema = the_schema()
    schema["components"]["schemas"]["ModelMessage"] = ONE_OBJECT_MODEL_MESSAGE

    checked = type_check(schema)

    assert checked.returncode != 0
    assert "error TS2322" in checked.stdout
    assert "ModelMessage[]" in checked.stdout
