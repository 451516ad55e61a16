"""A session: the packaged queries run on one opened export, in one scope, with every statement
recorded (for --show-sql)."""
