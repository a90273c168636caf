package raytest;

/** A class that is not a ShardTask. */
public final class NotATask {
}
