package app;

/** The main class of the shaded jar and of the JShell session: {@link Check#all()}, line by line. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        for (String line : Check.all()) {
            System.out.println(line);
        }
    }
}
