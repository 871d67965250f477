package batchexport

import "errors"

// failure is why a run failed, told twice: public, in the terms of the export's
// config, is what the project's members see as the run's latest_error; cause, with
// the server's paths and addresses, goes to hedge's log only.
type failure struct {
	public string
	cause  error
}

func (f *failure) Error() string { return f.public + ": " + f.cause.Error() }
func (f *failure) Unwrap() error { return f.cause }

// internalFailure is what the project's members are told of an error of hedge itself
// (its staging directory, its database): that it happened, not where.
const internalFailure = "hedge could not export this window: an error of hedge itself, which its log records"

// publicError is what the project's members are told of err, a run's failure: a
// failure's public words, an InvalidConfig's detail (their own config is wrong), or
// for anything else only that hedge failed.
func publicError(err error) string {
	var f *failure
	if errors.As(err, &f) {
		return f.public
	}
	var invalid *InvalidConfig
	if errors.As(err, &invalid) {
		return invalid.Detail
	}
	return internalFailure
}
