"""A stand-in for a node's publisher: it keeps what the node publishes instead of sending it.

Given to a node as ``stand_ins={topic: StandIn(...)}`` (``KitNode.publisher`` returns it
for that topic), or to a core that publishes through it (``HeldBack``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class StandIn:
    """Keeps each message published (as ``keep`` makes it) and says it has ``readers`` readers.

    ``msg_type`` is the message class the graph sees it publish, for a node that asks the graph for
    its readers by name.
    """

    def __init__(
        self,
        topic: str = "",
        *,
        readers: int = 1,
        keep: Callable[[Any], Any] | None = None,
        msg_type: Any = None,
    ) -> None:
        self.topic_name = topic
        self.msg_type = msg_type
        self.readers = readers
        self.messages: list[Any] = []
        self._keep = keep

    def publish(self, message: Any) -> None:
        self.messages.append(message if self._keep is None else self._keep(message))

    def get_subscription_count(self) -> int:
        return self.readers

    def wait_for_all_acked(self, _timeout: Any = None) -> bool:
        return True
