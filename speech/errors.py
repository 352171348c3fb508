"""Errors a user can fix: printed by the CLI as one line, without a traceback."""


class UserError(Exception):
    """Bad input or an unknown option value; the message names the input and what to do."""


class ConfigError(UserError, ValueError):
    """A configuration value that cannot be used: the message names the key and what is allowed.

    `key` is the dotted name of the option (for example `asr_options.device`), `allowed` says what
    it accepts. Raised by the option dataclasses, configuration files and the public API alike.
    """

    def __init__(self, key: str, allowed: str, got: object = None, *, message: str | None = None) -> None:
        self.key = key
        self.allowed = allowed
        self.got = got
        if message is None:
            message = f"{key}: {allowed}" if got is None else f"{key}: {allowed}, got {got!r}"
        super().__init__(message)

    def within(self, where: str) -> "ConfigError":
        """The same error, its message prefixed with where the value came from (a file name)."""
        return ConfigError(self.key, self.allowed, self.got, message=f"{where}: {self}")


class OptionError(ConfigError, TypeError):
    """An option an engine does not have (also a TypeError, as the registry raised before)."""


class DeviceError(ConfigError):
    """A device that was asked for and is not usable here (for example `cuda` without a GPU)."""
