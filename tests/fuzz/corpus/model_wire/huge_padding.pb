
bad"float32*0:conv2d(0@ÿÿÿÿ