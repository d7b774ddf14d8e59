"""moto's DynamoDB answers without asking every attribute value for each type it could have.

moto serializes a response by walking its output shape, and for each member of each structure asks
an attribute picker (every alias provider, then botocore's `xform_name` of each alias) for the value.
An item's every attribute value is an `AttributeValue` structure of ten members (`S`, `N`, `B`, `SS`,
`NS`, `BS`, `M`, `L`, `NULL`, `BOOL`) of which it holds one: ten lookups of about twenty aliases to
find it, which was a tenth of a fanned-out tick's CPU on the embedded server. moto's DynamoDB hands
the serializer each attribute value as the dict DynamoDB's JSON has (`{"S": "..."}`), so while
`attribute_values_read_directly` is open an `AttributeValue` that is a dict serializes the members it
holds, each through moto's own serializer for its type, in the shape's member order: the same bytes
(tests/unit/test_moto_serializer.py compares both on every type). Anything else goes the stock way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

ATTRIBUTE_VALUE = "AttributeValue"


@contextmanager
def attribute_values_read_directly() -> Iterator[None]:
    """While open, an `AttributeValue` dict serializes the members it holds (moto's own function is
    the patch's `stock`, for a canary run inside a server that holds the patch)."""
    from moto.core.serialize import BaseJSONSerializer

    original = BaseJSONSerializer.__dict__["_serialize_type_structure"]

    def serialize_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if type(value) is not dict or shape.name != ATTRIBUTE_VALUE or shape.is_document_type:
            original(self, serialized, value, shape, key)
            return
        wrapper = self.MAP_TYPE() if key else serialized
        for member_key, member_shape in shape.members.items():
            member_shape.parent = shape
            member_value = value.get(member_key)
            if member_value is not None:
                self._serialize(wrapper, member_value, member_shape, member_key)
        if key:
            self._default_serialize(serialized, wrapper, shape, key)

    serialize_structure.stock = getattr(original, "stock", original)  # type: ignore[attr-defined]
    BaseJSONSerializer._serialize_type_structure = serialize_structure  # type: ignore[method-assign]
    try:
        yield
    finally:
        BaseJSONSerializer._serialize_type_structure = original  # type: ignore[method-assign]
