"""Who may call the API: a live token in `Authorization: Bearer`, whose scope allows the
endpoint's part. Each endpoint names its part (auth=READ, COMPOSE or SUBMIT)."""

from django.http import HttpRequest
from ninja.security import HttpBearer

from portal.models import ApiToken, Scope


class OutOfScope(Exception):
    def __init__(self, token: ApiToken, needed: Scope) -> None:
        self.token, self.needed = token, needed


class BearerToken(HttpBearer):
    """A live token whose scope allows the endpoint's part: `needed`, by default the most, so
    that an endpoint that names no scope is closed to the tokens that may not submit."""

    def __init__(self, needed: Scope = Scope.SUBMIT) -> None:
        super().__init__()
        self.needed = needed

    def __call__(self, request: HttpRequest) -> ApiToken | None:
        # Replaces HttpBearer's, which in DEBUG logs a header it cannot read: token and all.
        scheme, _, secret = request.headers.get(self.header, "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self.authenticate(request, secret.strip())

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        api_token = ApiToken.find(token)
        if api_token is None:
            return None
        api_token.mark_used()
        if not api_token.allows(self.needed):
            raise OutOfScope(api_token, self.needed)
        return api_token


# Each endpoint's part, named where it is declared (auth=READ...).
READ, COMPOSE, SUBMIT = (BearerToken(scope) for scope in Scope)
