"""What a Schema Registry call or a schema'd record can fail with."""

from __future__ import annotations

from http import HTTPStatus

from afkak.common import KafkaError

#: The registry's error codes (Confluent's REST API; Apicurio's ccompat API answers the same).
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
INCOMPATIBLE_SCHEMA = 409
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202

#: HTTP statuses worth another attempt (confluent-kafka's and the Java client's set).
RETRIABLE_STATUSES = frozenset(
    {
        HTTPStatus.REQUEST_TIMEOUT,
        HTTPStatus.TOO_MANY_REQUESTS,
        HTTPStatus.INTERNAL_SERVER_ERROR,
        HTTPStatus.BAD_GATEWAY,
        HTTPStatus.SERVICE_UNAVAILABLE,
        HTTPStatus.GATEWAY_TIMEOUT,
    }
)


class SchemaRegistryError(KafkaError):
    """The registry refused a call, or could not be reached.

    ``http_status`` is the HTTP status (-1: no answer), ``error_code`` the
    registry's own code (``40401`` subject not found, ``409`` incompatible
    schema ... ; -1 when it gave none) and ``message`` its message.
    """

    def __init__(self, http_status: int, error_code: int, message: str) -> None:
        super().__init__(f"Schema Registry error {error_code} (HTTP {http_status}): {message}")
        self.http_status = http_status
        self.error_code = error_code
        self.message = message
        self.retriable = http_status == -1 or http_status in RETRIABLE_STATUSES


class SerializationError(KafkaError, ValueError):
    """A record could not be serialized (it does not match its schema, or no schema id)."""


class DeserializationError(KafkaError, ValueError):
    """A record's bytes could not be decoded: not the Confluent wire format, an
    unknown or unreachable schema id, or a payload that does not match the schema.

    A deserializer built with ``on_error="deliver"`` (the default) gives this
    error as the record's key or value instead of stopping the consumer:
    ``data`` holds the record's bytes, so nothing is lost, and ``schema_id``
    the id read from the frame (None when the frame was too short).
    """

    def __init__(self, message: str, data: bytes, schema_id: int | None = None) -> None:
        super().__init__(message)
        self.data = data
        self.schema_id = schema_id

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DeserializationError)
            and str(other) == str(self)
            and other.data == self.data
            and other.schema_id == self.schema_id
        )

    def __hash__(self) -> int:
        return hash((str(self), self.data, self.schema_id))
