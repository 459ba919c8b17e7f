"""What ``import <solution module>`` gives the tests in the harness: a module of names that
are looked up in the candidate process on first use (split from :mod:`tl_remote`)."""

import os

from tl_remote import RemoteObject


class RemoteName(RemoteObject):
    """A name of the solution's module, looked up in the candidate on first use."""

    def __init__(self, remote, name):
        super().__init__(remote, None, name)

    def _tl_target(self):
        ref = object.__getattribute__(self, "_tl_ref")
        if ref is None:
            got = self._tl_remote.result(self._tl_remote.ask({"op": "get", "name": self._tl_type}))
            ref = got._tl_target() if isinstance(got, RemoteObject) else ("v", got)
            object.__setattr__(self, "_tl_ref", ref)
        return ref


class RemoteModule(type(os)):
    """What ``import solution`` gives the tests: every attribute a :class:`RemoteName`."""

    def __init__(self, name, remote, public=()):
        super().__init__(name)
        object.__setattr__(self, "_tl_remote", remote)
        object.__setattr__(self, "_tl_names", {})
        object.__setattr__(self, "_tl_all", list(public))

    def __getattr__(self, name):
        if name == "__all__":   # ``from <solution> import *``: the names read from its source
            return list(object.__getattribute__(self, "_tl_all"))
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        names = object.__getattribute__(self, "_tl_names")
        if name not in names:
            names[name] = RemoteName(object.__getattribute__(self, "_tl_remote"), name)
        return names[name]
