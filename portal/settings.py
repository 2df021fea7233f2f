"""Django settings for the portal. Every value comes from the environment: see .env.example."""

import re
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from portal import broker
from portal.env import REQUIRED, env_bool, env_choice, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

# Local state (SQLite database, embedded broker, beat schedule) lives here. Tests point it at a
# temporary folder so that they never touch a developer's data.
VAR_DIR = Path(env_str("PORTAL_VAR_DIR", str(BASE_DIR / "var"))).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)

# The guidance documents the engine's sources cite, read into the database by seed_guidance and
# import_guidance_documents; their text is not part of the repository.
GUIDANCE_DOCS_DIR = Path(
    env_str("GUIDANCE_DOCS_DIR", str(BASE_DIR.parent / "shared" / "guidance-docs"))
).resolve()

DEBUG = env_bool("DEBUG", False)

# A fixed key in development keeps sessions across restarts; production has no default at all.
INSECURE_DEVELOPMENT_SECRET_KEY = "django-insecure-development-only-never-use-in-production"
SECRET_KEY = env_str(
    "SECRET_KEY",
    INSECURE_DEVELOPMENT_SECRET_KEY if DEBUG else REQUIRED,
    hint=(
        "It is required when DEBUG is false. Generate one with "
        "`python3 -c 'import secrets; print(secrets.token_urlsafe(50))'` and export "
        "SECRET_KEY=<that value> (or put it in the env file docker/compose.yaml reads), "
        "or set DEBUG=true for local development."
    ),
)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
# The addresses the portal reaches clusters from, for the from= of the key lines users install
# (e.g. "203.0.113.7,2001:db8::7"); empty: the lines name none.
PORTAL_SSH_FROM = env_list("PORTAL_SSH_FROM")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "simple_history",
    "axes",
    "ninja",  # serves the API's interactive docs (Swagger UI) from its own static files
    "portal",
    "guidance",
    "jobs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves collected static files under gunicorn, so a deployment needs no separate web server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Before anything reads the request's values into a query (PostgreSQL refuses NUL).
    "portal.nul_guard.RefuseNulCharacters",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Records who made each change in the history tables; needs request.user, so after auth.
    "simple_history.middleware.HistoryRequestMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its answer (429).
    "axes.middleware.AxesMiddleware",
]
# Requests per API token (portal/api.py), as count/period: s, min, hour or day.
API_RATE_LIMIT = env_str("API_RATE_LIMIT", "120/min")
if not re.fullmatch(r"[1-9]\d*/(s|sec|min|hour|day)", API_RATE_LIMIT):
    raise ImproperlyConfigured(
        f"API_RATE_LIMIT is a count per s, min, hour or day, e.g. 120/min; got {API_RATE_LIMIT}"
    )
# Django's cache (the API's rate counts): this process's memory, or one all processes share.
if _cache_url := env_str("CACHE_URL", None):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _cache_url,
        }
    }
# django-axes counts failed logins per username and address and refuses more (the login page and
# the admin alike) for LOGIN_COOLOFF_MINUTES after LOGIN_FAILURE_LIMIT of them.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15, minimum=1))
# By both: one address cannot lock a user out everywhere by guessing at their name.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# A try while locked out starts the cool-off again: the lockout answer's Retry-After says all of it.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = True
AXES_LOCKOUT_CALLABLE = "portal.lockout.locked_out"

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def _database(url: str) -> dict:
    try:
        config = dj_database_url.parse(url)
    except ValueError as exc:
        # The URL itself is left out of the message: it may hold a password.
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
    if url.startswith("sqlite"):
        # The web server and the Celery worker write the same file. WAL lets readers go on while
        # one writes, IMMEDIATE takes the write lock up front (no "database is locked" midway),
        # and synchronous=NORMAL is WAL's safe setting: a commit costs no fsync, only a
        # checkpoint does.
        config["OPTIONS"] = {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
        }
    else:
        # Reusing connections saves a round trip per request; SQLite opens a local file instead.
        config["CONN_MAX_AGE"] = 60
        config["CONN_HEALTH_CHECKS"] = True
    return config


DATABASES = {"default": _database(env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"))}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in (
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    )
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# Decided here from the environment: WhiteNoise would otherwise read DEBUG when its middleware
# starts, after the test runner has forced DEBUG off, and warn that nothing was collected.
WHITENOISE_AUTOREFRESH = WHITENOISE_USE_FINDERS = DEBUG

if not DEBUG:
    # Off only for trying a production-mode build over plain HTTP, where secure cookies never stick.
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    # What `check --deploy` asks for, set where the deployment is known: off by default, because
    # behind a TLS proxy that does not say X-Forwarded-Proto a redirect to HTTPS never ends.
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
    # Probes ask from beside the process, over plain HTTP (compose.yaml's healthcheck): a redirect
    # to HTTPS there would mark a healthy web container unhealthy.
    SECURE_REDIRECT_EXEMPT = [r"^healthz/$"]
    if env_bool("TRUST_X_FORWARDED_PROTO", False):  # only behind a proxy that sets it itself
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)

# Celery reads every CELERY_* setting here (portal/celery.py). The default broker is embedded
# (portal/broker.py): a SQLite file of its own, so `make run` works on a bare machine.
CELERY_BROKER_URL = env_str(
    "CELERY_BROKER_URL", broker.PREFIX + str(VAR_DIR / "celery" / "broker.sqlite3")
)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
BROKER_SQLITE_PATH = broker.sqlite_path(CELERY_BROKER_URL)
if BROKER_SQLITE_PATH:
    Path(BROKER_SQLITE_PATH).parent.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = broker.transport_options(BROKER_SQLITE_PATH)
elif CELERY_BROKER_URL.startswith("filesystem://"):
    # The former default, kept for tests/test_lost_submission.py: its worker can read a message
    # file that is still being written and die of it. Processed messages are deleted.
    _broker_dir = VAR_DIR / "celery" / "broker"
    _control_dir = VAR_DIR / "celery" / "control"
    for _folder in (_broker_dir, _control_dir):
        _folder.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        # kombu defaults this to ./control, relative to whatever directory the process started in.
        "control_folder": str(_control_dir),
        "store_processed": False,
    }
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # A late-acknowledged task (submit_job) stays unacknowledged in Redis while it
    # runs; if its worker dies, Redis gives it to another worker this many seconds after it was
    # first delivered. It must exceed the longest task and retry countdown, or a task still
    # running (or waiting for its countdown) would be delivered a second time.
    _visibility_timeout = env_int("CELERY_VISIBILITY_TIMEOUT", 3600)
    if _visibility_timeout < 1:
        raise ImproperlyConfigured(
            f"CELERY_VISIBILITY_TIMEOUT must be at least 1 (seconds), got {_visibility_timeout}"
        )
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": _visibility_timeout}
# A submission running when the broker connection drops is let finish rather than cut mid-sbatch;
# the broker hands it out again later, and a second run finds the job done (jobs/tasks.py).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Tasks save their results on our models, so by default nothing else stores them.
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", None)
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celery-beat-schedule")
# How often the worker asks each cluster login with active jobs what became of them: one squeue
# and one sacct per login, whatever the number of jobs or of people watching.
POLL_SECONDS = env_int("POLL_SECONDS", 10, minimum=1)
# A login whose jobs did not change is polled less often: twice the wait after each quiet poll,
# up to this; a change, a submission or its owner opening a job page brings it back to
# POLL_SECONDS. At most POLL_SECONDS turns the back-off off.
POLL_MAX_SECONDS = env_int("POLL_MAX_SECONDS", 6 * POLL_SECONDS, minimum=1)
# Beat sends each login's poll to this queue, so that submissions (the default queue, "celery")
# never wait behind polls: run a worker for each, or one with `--queues celery,poll`.
POLL_QUEUE = env_str("POLL_QUEUE", "poll")
# Logins per poll task: a site with hundreds due at once sends a quarter of the messages, each
# costing the broker and a worker their own round of receiving, tracing and acknowledging.
POLL_BATCH = env_int("POLL_BATCH", 4, minimum=1)
# How long "Could it start sooner?" waits for Slurm's estimates of every change, asked at once.
SOONER_BUDGET_SECONDS = env_int("SOONER_BUDGET_SECONDS", 10, minimum=1)
# How long a plan an agent made (jobs.plans) may wait for its owner's word before it must be made
# again: the cluster's queue and the start estimate it showed go stale.
PLAN_MINUTES = env_int("PLAN_MINUTES", 15, minimum=1)
# Every login's jobs are also read from Slurm's accounting, those submitted outside the portal
# included: HISTORY_DAYS back the first time, then only what happened since the last read, at
# most once every HISTORY_READ_SECONDS (one sacct per login). 0 turns it off: the portal then
# knows only the jobs it submitted.
HISTORY_DAYS = env_int("HISTORY_DAYS", 14, minimum=0, maximum=366)
HISTORY_READ_SECONDS = env_int("HISTORY_READ_SECONDS", 6 * POLL_SECONDS, minimum=1)
# A submission's task holds its job this long after its last attempt began; one silent for longer
# was lost (a worker killed as it took it: the broker has already marked the message delivered),
# and the sweep hands the job to a worker again. Longer than an attempt and its retries take.
SUBMIT_LEASE_SECONDS = env_int("SUBMIT_LEASE_SECONDS", 300, minimum=1)
# How often beat's sweep looks for such jobs, and for ones the broker did not take (Redis down).
SUBMIT_SWEEP_SECONDS = env_int("SUBMIT_SWEEP_SECONDS", 60, minimum=1)
# A worker takes a message only when a process of its pool is free: a killed worker then loses
# only the polls it was running, whose leases run out (jobs.poll_leases), not a batch it had
# reserved and not begun, held until POLL_HOLD_SECONDS.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ROUTES = {
    "jobs.tasks.poll_login": {"queue": POLL_QUEUE},
    "jobs.tasks.poll_logins": {"queue": POLL_QUEUE},
    "jobs.tasks.read_cluster_load": {"queue": POLL_QUEUE},
    "jobs.tasks.poll_cluster": {"queue": POLL_QUEUE},
}
CELERY_BEAT_SCHEDULE: dict[str, dict] = {
    "poll-clusters": {"task": "jobs.tasks.poll_clusters", "schedule": POLL_SECONDS},
    "sweep-submissions": {"task": "jobs.tasks.sweep_submissions", "schedule": SUBMIT_SWEEP_SECONDS},
}
if BROKER_SQLITE_PATH:
    CELERY_BEAT_SCHEDULE["prune-broker"] = {"task": "portal.tasks.prune_broker", "schedule": 600}
# Test only (tests/test_soak.py), never in production: beat sends portal.tasks.soak_mark every
# second and POST /soak/enqueue/ sends more of them from the web process.
SOAK_HOOKS = env_bool("SOAK_HOOKS", False)
if SOAK_HOOKS:
    CELERY_BEAT_SCHEDULE["soak-mark"] = {
        "task": "portal.tasks.soak_mark",
        "schedule": 1.0,
        "args": ["beat"],
    }

# GPU monitoring. The sampler in each GPU job writes a line per GPU every SAMPLE_SECONDS; the
# portal warns about wasted GPUs only after GPU_WARMUP_SECONDS of a job's run (data loading,
# compilation and the first batches are slow everywhere), 5 minutes unless tests say less.
SAMPLE_SECONDS = env_int("SAMPLE_SECONDS", 10, minimum=1, maximum=3600)
GPU_WARMUP_SECONDS = env_int("GPU_WARMUP_SECONDS", 300, minimum=0)

# SSH connections to clusters (jobs/cluster/pool.py). Each process keeps at most SSH_POOL_SIZE
# open, one per login in use, closing the least recently used idle one to make room; one idle
# for SSH_IDLE_SECONDS is closed, and opened again (one connect, ~40 ms) when next needed.
SSH_POOL_SIZE = env_int("SSH_POOL_SIZE", 32, minimum=1)
SSH_IDLE_SECONDS = env_int("SSH_IDLE_SECONDS", 300, minimum=1)

# Notifications (jobs/notify). E-mail goes through Django's e-mail framework (its MAILERS):
# printed on the console by default; "smtp" sends through the server below, "file" writes each
# message into EMAIL_FILE_PATH. Links in e-mails start with PORTAL_URL, the address users open.
_MAIL_BACKENDS = {"console": "console", "smtp": "smtp", "file": "filebased"}
_mail_backend = env_choice("EMAIL_BACKEND", list(_MAIL_BACKENDS), "console")
_mail_options: dict = {}
if _mail_backend == "smtp":
    _mail_options = {
        "host": env_str("EMAIL_HOST", "localhost"),
        "port": env_int("EMAIL_PORT", 25, minimum=1, maximum=65535),
        "username": env_str("EMAIL_HOST_USER", ""),
        "password": env_str("EMAIL_HOST_PASSWORD", ""),
        "use_tls": env_bool("EMAIL_USE_TLS", False),
        "use_ssl": env_bool("EMAIL_USE_SSL", False),
        "timeout": env_int("EMAIL_TIMEOUT", 10, minimum=1),  # a poll must not hang on a server
    }
    if _mail_options["use_tls"] and _mail_options["use_ssl"]:
        raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL exclude each other: set one.")
elif _mail_backend == "file":
    _mail_options = {"file_path": env_str("EMAIL_FILE_PATH", str(VAR_DIR / "mail"))}
MAILERS = {
    "default": {
        "BACKEND": f"django.core.mail.backends.{_MAIL_BACKENDS[_mail_backend]}.EmailBackend",
        "OPTIONS": _mail_options,
    }
}
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "GPU portal <gpu-portal@localhost>")
PORTAL_URL = env_str("PORTAL_URL", "http://127.0.0.1:8000")
# How often each open page asks for the unread count (and the browser for new notifications).
NOTIFICATION_REFRESH_SECONDS = env_int("NOTIFICATION_REFRESH_SECONDS", 15, minimum=1)

LOG_LEVEL = env_choice("LOG_LEVEL", ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "{asctime} {levelname} {name}: {message}", "style": "{"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # Django's default config gives the "django" logger a console handler of its own in DEBUG;
    # without this override every Django message would be printed twice.
    "loggers": {
        "django": {"handlers": [], "level": LOG_LEVEL, "propagate": True},
        # Its start-up line comes with every manage.py command; lockouts are warnings.
        "axes": {"handlers": [], "level": "WARNING", "propagate": True},
    },
}


def _portal_encryption_key() -> str:
    # Encrypts users' SSH private keys at rest (jobs/cluster/keys.py). Losing or changing it makes
    # every stored key unreadable. In DEBUG it is derived from SECRET_KEY, so development needs
    # nothing.
    import base64
    import binascii
    import hashlib

    how = (
        "Generate one with `python -c 'from cryptography.fernet import Fernet; "
        "print(Fernet.generate_key().decode())'` and export PORTAL_ENCRYPTION_KEY=<that value>."
    )
    derived = base64.urlsafe_b64encode(
        hashlib.sha256(f"portal-encryption-key:{SECRET_KEY}".encode()).digest()
    ).decode()
    key = env_str("PORTAL_ENCRYPTION_KEY", derived if DEBUG else REQUIRED, hint=how)
    try:
        valid = len(base64.urlsafe_b64decode(key.encode())) == 32
    except (binascii.Error, ValueError):
        valid = False
    if not valid:
        raise ImproperlyConfigured(
            f"PORTAL_ENCRYPTION_KEY must be a Fernet key (32 url-safe base64 bytes). {how}"
        )
    return key


PORTAL_ENCRYPTION_KEY = _portal_encryption_key()
