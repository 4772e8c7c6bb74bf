"""OpenAPI post-processing (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]): `ConfigBody`, the answer of
`GET /api/configs/{type}/{name}`, made exact (issue #31 point 5).

drf-spectacular writes it as a `oneOf` of the described types' bodies, whose keys are all optional: a node
pool's body then matched several branches, which `oneOf` forbids. An answer carries every key of its type
except the write-only ones (secrets), so each branch requires those keys, and the free-form documents (pod
templates, resource validations) are a last branch that matches no described type. Exactly one branch
matches any answer. And a nullable nested body (`{"allOf": [{"$ref": …}], "nullable": true}`, which OpenAPI
3.0 validators read as "the object, never null": `nullable` needs a `type` beside it) is written as
`{"anyOf": [{"$ref": …}, {"enum": [null]}]}`, so an unset group answered as null conforms.
"""

from __future__ import annotations


def exact_config_body(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    for component in schemas.values():
        for name, prop in (component.get("properties") or {}).items():
            component["properties"][name] = nullable_reference(prop)
    body = schemas.get("ConfigBody")
    if not body or "oneOf" not in body:
        return result
    refs = [branch["$ref"] for branch in body["oneOf"] if "$ref" in branch]
    keys = {ref: answer_keys(schemas[ref.rsplit("/", 1)[1]]) for ref in refs}
    typed = [{"allOf": [{"$ref": ref}], "required": keys[ref]} for ref in refs if keys[ref]]
    free_form = {
        "type": "object",
        "description": "A free-form document (POD_TEMPLATE, RESOURCE_VALIDATION): not any described type.",
        "not": {"anyOf": [{"required": keys[ref]} for ref in refs if keys[ref]]},
    }
    schemas["ConfigBody"] = {"oneOf": [*typed, free_form]}
    return result


def answer_keys(component: dict) -> list[str]:
    """The keys every answer of a body has: its properties but the write-only ones."""
    return sorted(name for name, prop in component.get("properties", {}).items() if not prop.get("writeOnly"))


def nullable_reference(prop: dict) -> dict:
    if not (prop.get("nullable") and len(prop.get("allOf", ())) == 1 and "type" not in prop):
        return prop
    rest = {key: value for key, value in prop.items() if key not in ("allOf", "nullable")}
    return {**rest, "anyOf": [prop["allOf"][0], {"enum": [None]}]}
